package zke

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// The Verify of each skippable step (see createSteps): one round of cheap
// checks that the step's effect is still in place, under the workflow's
// verify timeout, each remote call bounded by its own. A Verify changes
// nothing; its error says what no longer holds, and the step then runs.
// None of the steps verified here leaves in-memory results that later
// steps read, so no Verify has anything to rebuild.

// errStale is the cause of every "no longer in place" finding, so that
// tests and logs can tell it from a failed check.
var errStale = errors.New("no longer as the earlier run left it")

// stale says what no longer holds on n.
func stale(n node, format string, args ...any) error {
	return nodeErr(n, fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errStale), "")
}

// verifyCertificates checks that the PKI in the state needs nothing
// (re)issued now (no certificate expiring, none missing for a node) and
// that every node holds exactly the files it would be given.
func (r *run) verifyCertificates(ctx context.Context, rep *workflow.Reporter) error {
	b := r.snapshot().PKI
	if b == nil {
		return errNoPKI
	}
	_, changes, err := pki.Ensure(b, r.pkiInput())
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	if !changes.Empty() {
		var ids []string
		for _, is := range changes.Issued {
			ids = append(ids, fmt.Sprintf("%s (%s)", is.ID, is.Reason))
		}
		for _, id := range changes.Dropped {
			ids = append(ids, fmt.Sprintf("%s (dropped)", id))
		}
		return fmt.Errorf("certificates to issue or drop: %s: %w", strings.Join(ids, ", "), errStale)
	}
	server, err := r.apiServerURL()
	if err != nil {
		return err
	}
	return workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		files, err := b.Files(pkiNode(n), pki.FileOptions{Prefix: n.PrefixPath, Server: server, ClusterName: r.cfg.Name})
		if err != nil {
			return nodeErr(n, err, "")
		}
		want := make(map[string]string, len(files))
		for p, f := range files {
			want[p] = contentHash(f.Data)
		}
		return r.filesMatch(ctx, n, want)
	})
}

// filesMatch checks that n's files (by path) have the content hashes of
// want.
func (r *run) filesMatch(ctx context.Context, n node, want map[string]string) error {
	c, err := r.client(n)
	if err != nil {
		return err
	}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range want {
			if !yield(p) {
				return
			}
		}
	})
	got, err := remoteHashes(ctx, c, paths)
	if err != nil {
		return nodeErr(n, err, "")
	}
	for i, p := range paths {
		if got[i] != want[p] {
			if got[i] == hashMissing {
				return stale(n, "%s is missing", p)
			}
			return stale(n, "%s has other content", p)
		}
	}
	return nil
}

// hashMissing is what remoteHashes reports for a file it cannot read.
const hashMissing = "missing"

// remoteHashes returns the SHA-256 (hex) of each of paths on c's node, in
// order, hashMissing for a file that cannot be read: one command,
// bounded by probeTimeout.
func remoteHashes(ctx context.Context, c *transport.Client, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, remoteHashScript(paths), transport.ExecOptions{})
	if err != nil {
		return nil, fmt.Errorf("hash %d files: %w", len(paths), err)
	}
	return parseRemoteHashes(string(res.Stdout), len(paths))
}

// remoteHashScript prints one line per path: its hex SHA-256, or
// "missing". Every path is shell-quoted.
func remoteHashScript(paths []string) string {
	return `for f in ` + quoteAll(paths) + `; do h=$(sha256sum 2>/dev/null < "$f") || h=` + hashMissing + `; echo "${h%% *}"; done`
}

// parseRemoteHashes reads remoteHashScript's output for n paths.
func parseRemoteHashes(out string, n int) ([]string, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != n {
		return nil, fmt.Errorf("hash %d files: %d lines of output", n, len(lines))
	}
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines, nil
}

// verifyImages checks that every node's Docker has the images of its
// containers and that every worker's containerd has the pod images (as
// far as the images step checks them: a node without ctr, or a digest
// reference, is left to the kubelet there too).
func (r *run) verifyImages(ctx context.Context, rep *workflow.Reporter) error {
	return workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		d, err := r.docker(n)
		if err != nil {
			return err
		}
		missing, err := missingImages(ctx, d, r.imagesFor(n))
		if err != nil {
			return nodeErr(n, err, "")
		}
		if len(missing) > 0 {
			return stale(n, "Docker lacks %s", strings.Join(missing, ", "))
		}
		if !n.HasRole(model.RoleWorker) {
			return nil
		}
		c, err := r.client(n)
		if err != nil {
			return err
		}
		for _, ref := range r.podImagesOf(n) {
			if strings.Contains(ref, "@") {
				continue
			}
			state, err := ctrImageState(ctx, c, n.ContainerdSocket, ref)
			if err != nil {
				return nodeErr(n, fmt.Errorf("look up image %s in containerd: %w", ref, err), "")
			}
			if state == ctrMissing {
				return stale(n, "containerd lacks %s", ref)
			}
		}
		return nil
	})
}

// verifyEtcd checks that every etcd node has joined (in the state), runs
// its etcd with the spec its membership fixes, answers healthy, and is a
// voting member in the member list.
func (r *run) verifyEtcd(ctx context.Context, rep *workflow.Reporter) error {
	st := r.snapshot()
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	if len(etcdNodes) == 0 {
		return nil
	}
	for _, n := range etcdNodes {
		if !slices.Contains(st.EtcdMembers, n.Name) {
			return stale(n, "has not joined etcd yet")
		}
	}
	err := workflow.ForEach(ctx, etcdNodes, nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.containerCurrent(ctx, n, r.etcdSpecOf(n, st)); err != nil {
			return err
		}
		if ok, err := r.etcdHealthy(ctx, n); !ok {
			return nodeErr(n, fmt.Errorf("etcd health: %w", err), "")
		}
		return nil
	})
	if err != nil {
		return err
	}
	list, err := r.etcdMembers(ctx, etcdNodes[0])
	if err != nil {
		return nodeErr(etcdNodes[0], fmt.Errorf("etcd member list: %w", err), "")
	}
	for _, n := range etcdNodes {
		m := findMember(list, etcdPeerURL(n))
		switch {
		case m == nil:
			return stale(n, "not in the etcd member list")
		case m.IsLearner:
			return stale(n, "still an etcd learner")
		}
	}
	return nil
}

// verifyControlPlane checks that every controlplane node runs its three
// components with their current specs and that each answers its health
// endpoint.
func (r *run) verifyControlPlane(ctx context.Context, rep *workflow.Reporter) error {
	return workflow.ForEach(ctx, withRole(r.nodes, model.RoleControlPlane), nodeConcurrency, func(ctx context.Context, n node) error {
		for _, spec := range r.controlPlaneSpecs(n) {
			if err := r.containerCurrent(ctx, n, spec); err != nil {
				return err
			}
		}
		if ok, err := r.apiServerReady(ctx, n); !ok {
			return nodeErr(n, fmt.Errorf("kube-apiserver /readyz: %w", err), "")
		}
		for _, port := range []int{portControllerManager, portScheduler} {
			if ok, err := r.localHealthz(ctx, n, port); !ok {
				return nodeErr(n, fmt.Errorf("/healthz on port %d: %w", port, err), "")
			}
		}
		return nil
	})
}

// containerCurrent checks that n runs spec as Ensure leaves it: zke's
// container of that name, with spec's hash, running.
func (r *run) containerCurrent(ctx context.Context, n node, spec runtime.ContainerSpec) error {
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	want, err := runtime.SpecHash(spec, r.cfg.Name)
	if err != nil {
		return nodeErr(n, err, "")
	}
	info, err := d.Inspect(ctx, spec.Name)
	if errors.Is(err, runtime.ErrNotFound) {
		return stale(n, "container %s is missing", spec.Name)
	}
	if err != nil {
		return nodeErr(n, fmt.Errorf("inspect %s: %w", spec.Name, err), "")
	}
	return containerMatches(n, spec.Name, want, info)
}

// containerMatches checks a container's state against the spec hash
// want.
func containerMatches(n node, name, want string, info runtime.ContainerInfo) error {
	switch {
	case info.SpecHash() != want:
		return stale(n, "container %s runs another spec", name)
	case info.Status != "running":
		return stale(n, "container %s is %s", name, info.Status)
	}
	return nil
}
