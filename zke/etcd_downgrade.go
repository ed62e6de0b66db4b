package zke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// errEtcdTooOld: the etcd image asked for is more than one minor release
// below the cluster's etcd version. etcd downgrades one minor release at a
// time, through its downgrade API; anything further means restoring a
// snapshot taken before the upgrade.
var errEtcdTooOld = errors.New("etcd can go down only one minor release at a time")

// etcdMinor is an etcd release's major.minor: what etcd's cluster and
// storage versions keep.
type etcdMinor struct{ major, minor int }

func (v etcdMinor) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v etcdMinor) less(o etcdMinor) bool {
	return v.major < o.major || (v.major == o.major && v.minor < o.minor)
}

// parseEtcdMinor reads major.minor from an etcd version ("3.7.0") or an
// image tag naming one: kubeadm's "3.6.8-0", upstream's "v3.6.8".
func parseEtcdMinor(s string) (etcdMinor, bool) {
	s = strings.TrimPrefix(s, "v")
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return etcdMinor{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return etcdMinor{}, false
	}
	return etcdMinor{major, minor}, true
}

// etcdImageMinor is the etcd release an image's tag names, or false for a
// tag that names none (a digest, "latest", a custom scheme): zke then
// leaves etcd's versions to the image.
func etcdImageMinor(image string) (etcdMinor, bool) {
	i := strings.LastIndex(image, ":")
	if strings.Contains(image, "@") || i < 0 || strings.Contains(image[i:], "/") {
		return etcdMinor{}, false
	}
	return parseEtcdMinor(image[i+1:])
}

// etcdStatus is what zke reads of etcd's maintenance status (grpc-gateway
// JSON of etcdserverpb.StatusResponse, etcd 3.6 and later).
type etcdStatus struct {
	Version        string `json:"version"`
	StorageVersion string `json:"storageVersion"`
	DowngradeInfo  *struct {
		Enabled       bool   `json:"enabled"`
		TargetVersion string `json:"targetVersion"`
	} `json:"downgradeInfo"`
}

func (r *run) etcdStatusOf(ctx context.Context, m node) (etcdStatus, error) {
	var st etcdStatus
	body, err := r.etcdCall(ctx, m, "/v3/maintenance/status", "{}")
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return st, fmt.Errorf("decode etcd status: %w", err)
	}
	return st, nil
}

// etcdClusterMinor is the cluster version m's etcd reports on /version
// ("etcdcluster"), or false while the cluster has not decided one.
func (r *run) etcdClusterMinor(ctx context.Context, m node) (etcdMinor, bool, error) {
	body, err := r.etcdRequest(ctx, m, "GET", "/version", "")
	if err != nil {
		return etcdMinor{}, false, err
	}
	var v struct {
		Cluster string `json:"etcdcluster"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return etcdMinor{}, false, fmt.Errorf("decode etcd /version: %w", err)
	}
	cv, ok := parseEtcdMinor(v.Cluster)
	return cv, ok, nil
}

// etcdVersionsFor readies a running etcd cluster for members of the
// config's etcd image, before any member is replaced. etcd refuses to
// start a member older than the cluster version (3.6 members cannot join
// a cluster that reached 3.7), so a revert of an upgrade that moved etcd
// up a minor release first enables etcd's downgrade to the image's
// release and waits until every member keeps its data at that release;
// the members then restart on the older image one by one, and etcd ends
// the downgrade itself when the last has. An upgrade past a downgrade
// left enabled (a revert stopped half-way, then retried as an upgrade)
// cancels it, or the cluster version would stay down for good.
//
// It reports whether a downgrade is under way: the caller then brings the
// joined members to the image before any member joins (etcd admits no
// new member during a downgrade). With no member answering it decides
// nothing: the members are started as they are, and a member etcd
// refuses shows in its health wait.
func (r *run) etcdVersionsFor(ctx context.Context, rep *workflow.Reporter, etcdNodes []node) (bool, error) {
	members := r.snapshot().EtcdMembers
	want, ok := etcdImageMinor(r.images[model.ImageEtcd])
	if len(members) == 0 {
		return false, nil
	}
	if !ok {
		rep.Logf("", "the etcd image %s names no etcd release: etcd's own version checks apply", r.images[model.ImageEtcd])
		return false, nil
	}
	m, err := r.healthyEtcdMember(ctx, members)
	if err != nil {
		rep.Logf("", "etcd's versions not checked before its members start: %v", err)
		return false, nil
	}
	st, err := r.etcdStatusOf(ctx, m)
	if err != nil {
		return false, nodeErr(m, err, "")
	}
	if d := st.DowngradeInfo; d != nil && d.Enabled {
		target, _ := parseEtcdMinor(d.TargetVersion)
		switch {
		case target == want:
			return true, r.waitEtcdStorage(ctx, rep, etcdNodes, members, want)
		case want.less(target):
			return false, nodeErr(m, fmt.Errorf("etcd is downgrading to %s and the etcd image %s is %s: %w",
				target, r.images[model.ImageEtcd], want, errEtcdTooOld), "give an etcd image of "+target.String()+" or later")
		}
		return false, r.cancelEtcdDowngrade(ctx, rep, m, target, want)
	}
	cv, err := r.etcdClusterVersionFor(ctx, rep, m, etcdNodes, members, want)
	if err != nil || !want.less(cv) {
		return false, err
	}
	if want != (etcdMinor{cv.major, cv.minor - 1}) {
		return false, nodeErr(m, fmt.Errorf("etcd's cluster version is %s and the etcd image %s is %s: %w",
			cv, r.images[model.ImageEtcd], want, errEtcdTooOld),
			"restore the snapshot taken before the upgrade (?action=restore), or give an etcd image of "+
				etcdMinor{cv.major, cv.minor - 1}.String()+" or later")
	}
	// etcd lowers its versions only while it knows every member's: a
	// member that does not answer would hold the downgrade half-way, so
	// it is removed first when the config drops it, and otherwise named.
	if err := r.etcdRemoveMembers(ctx, rep, etcdNodes); err != nil {
		return false, err
	}
	for _, n := range joinedNodes(etcdNodes, r.snapshot().EtcdMembers) {
		if _, err := r.etcdStatusOf(ctx, n); err != nil {
			return false, nodeErr(n, fmt.Errorf("etcd's downgrade to %s needs every member answering: %w", want, err),
				r.containerLogsHint(ctx, n, containerEtcd))
		}
	}
	rep.Report(m.Name, fmt.Sprintf("etcd's cluster version is %s: enabling etcd's downgrade to %s before its members run %s",
		cv, want, r.images[model.ImageEtcd]))
	body, _ := json.Marshal(map[string]string{"action": "ENABLE", "version": want.String()})
	if _, err := r.etcdCall(ctx, m, "/v3/maintenance/downgrade", string(body)); err != nil {
		return false, nodeErr(m, fmt.Errorf("enable etcd's downgrade to %s: %w", want, err), "")
	}
	return true, r.waitEtcdStorage(ctx, rep, etcdNodes, r.snapshot().EtcdMembers, want)
}

// etcdClusterVersionFor is the cluster version m reports, once it has
// caught up: etcd raises it a few seconds after its last member moved up
// a release, and a revert that read it in between would restart members
// on an image etcd is about to refuse. So when every member already runs
// a release above want and the cluster version does not, it waits
// (bounded) for etcd to raise it. An undecided version counts as want's.
func (r *run) etcdClusterVersionFor(ctx context.Context, rep *workflow.Reporter, m node, etcdNodes []node, members []string, want etcdMinor) (etcdMinor, error) {
	cv, decided, err := r.etcdClusterMinor(ctx, m)
	if err != nil {
		return cv, nodeErr(m, err, "")
	}
	if decided && want.less(cv) {
		return cv, nil
	}
	lowest := etcdMinor{}
	for i, n := range joinedNodes(etcdNodes, members) {
		st, err := r.etcdStatusOf(ctx, n)
		if err != nil {
			return want, nil // the member's own start decides
		}
		v, ok := parseEtcdMinor(st.Version)
		if !ok {
			return want, nil
		}
		if i == 0 || v.less(lowest) {
			lowest = v
		}
	}
	if !want.less(lowest) {
		return want, nil
	}
	what := "etcd's cluster version raised to " + lowest.String() + " (every member runs it)"
	err = poll(ctx, waitOn{rep: rep, node: m.Name}, etcdHealthTimeout, what, func(ctx context.Context) (bool, error) {
		cv, decided, err = r.etcdClusterMinor(ctx, m)
		if err != nil {
			return false, err
		}
		return decided && !cv.less(lowest), nil
	})
	return cv, nodeErr(m, err, "")
}

// cancelEtcdDowngrade cancels a downgrade to target and waits until etcd
// says it is off: etcd answers a cancel it could not commit with success.
func (r *run) cancelEtcdDowngrade(ctx context.Context, rep *workflow.Reporter, m node, target, want etcdMinor) error {
	rep.Logf(m.Name, "cancelling etcd's downgrade to %s: the cluster's etcd image is %s", target, want)
	what := "etcd's downgrade to " + target.String() + " cancelled"
	return nodeErr(m, poll(ctx, waitOn{rep: rep, node: m.Name}, etcdHealthTimeout, what, func(ctx context.Context) (bool, error) {
		st, err := r.etcdStatusOf(ctx, m)
		if err != nil {
			return false, err
		}
		if st.DowngradeInfo == nil || !st.DowngradeInfo.Enabled {
			return true, nil
		}
		_, err = r.etcdCall(ctx, m, "/v3/maintenance/downgrade", `{"action":"CANCEL"}`)
		return false, err
	}), "")
}

// waitEtcdDowngradeOver waits until etcd has ended its downgrade, which it
// does once every member runs the target release (etcd checks every 5 s).
func (r *run) waitEtcdDowngradeOver(ctx context.Context, rep *workflow.Reporter, members []string) error {
	return poll(ctx, waitOn{rep: rep}, etcdHealthTimeout, "etcd's downgrade finished", func(ctx context.Context) (bool, error) {
		m, err := r.healthyEtcdMember(ctx, members)
		if err != nil {
			return false, err
		}
		st, err := r.etcdStatusOf(ctx, m)
		if err != nil {
			return false, err
		}
		return st.DowngradeInfo == nil || !st.DowngradeInfo.Enabled, nil
	})
}

// joinedNodes are the nodes of etcdNodes that are etcd members already.
func joinedNodes(etcdNodes []node, members []string) []node {
	var out []node
	for _, n := range etcdNodes {
		if slices.Contains(members, n.Name) {
			out = append(out, n)
		}
	}
	return out
}

// waitEtcdStorage waits until every joined member keeps its data at want:
// only then may a member of that release open it.
func (r *run) waitEtcdStorage(ctx context.Context, rep *workflow.Reporter, etcdNodes []node, members []string, want etcdMinor) error {
	for _, n := range joinedNodes(etcdNodes, members) {
		what := "etcd on " + n.Name + " keeping its data at " + want.String() + " for the downgrade"
		err := poll(ctx, waitOn{rep: rep, node: n.Name}, etcdHealthTimeout, what, func(ctx context.Context) (bool, error) {
			st, err := r.etcdStatusOf(ctx, n)
			if err != nil {
				return false, err
			}
			sv, ok := parseEtcdMinor(st.StorageVersion)
			if !ok || sv != want {
				return false, fmt.Errorf("storage version %q", st.StorageVersion)
			}
			return true, nil
		})
		if err != nil {
			return nodeErr(n, err, r.containerLogsHint(ctx, n, containerEtcd))
		}
	}
	return nil
}
