package zke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

const (
	// dirEtcdRestore holds, on each etcd member, the snapshot being
	// restored, etcd's restore output until it takes the data
	// directory's place, and the data it replaced.
	dirEtcdRestore = "/var/lib/etcd-restore"
	// restoreJobTimeout bounds etcd's restore of one member's data: a
	// copy of the snapshot's database and a new WAL.
	restoreJobTimeout = 5 * time.Minute
	// restoreUploadTimeout bounds the upload of the snapshot to one
	// member (an etcd at its 8 GiB quota over a slow link).
	restoreUploadTimeout = 30 * time.Minute
	// restoreCommandTimeout bounds each shell command of a member's
	// restore (checks, moves on one filesystem).
	restoreCommandTimeout = 2 * time.Minute
	// containerEtcdRestore is the name of the restore job's container.
	containerEtcdRestore = "zke-etcd-restore"
)

// OpenSnapshot opens the snapshot a restore puts in place; every call
// gives a new stream of the same bytes (one per member).
type OpenSnapshot func(ctx context.Context) (io.ReadCloser, error)

// Restore replaces the data of every etcd member of an installed cluster
// with the etcd snapshot snapshot (read through open), as etcd's disaster
// recovery asks: the API servers, controller managers and schedulers are
// stopped first so that nothing writes, then every etcd member; each
// member's data is restored from the snapshot by etcd's own tool (etcdutl
// snapshot restore, in a job container of the cluster's etcd image) as a
// new etcd cluster (a new cluster token, the same member names and peer
// URLs), the old data kept aside on the node; every member then starts at
// once (they need each other for a quorum) and must be healthy with the
// full membership before the control plane starts again, health-gated;
// the kubelets and kube-proxies restart last so that nothing keeps state
// the restore took back. A failed or cancelled restore resumes from prev:
// members it finished are not restored again.
func (in *Installer) Restore(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink, snapshot string, open OpenSnapshot) (State, error) {
	if prev.Applied == nil || prev.PKI == nil {
		return prev, workflow.UserFixable(errors.New("the cluster was never created: there is no etcd to restore; retry the create"))
	}
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return prev, err
	}
	defer r.close()
	if err := r.restorableMembers(); err != nil {
		return prev, err
	}
	if p := r.snapshot().Restore; p == nil || p.Snapshot != snapshot {
		token := fmt.Sprintf("zke-%s-restore-%d", cfg.Name, in.clock().UTC().Unix())
		next := &RestoreProgress{Snapshot: snapshot, Token: token, Aside: token}
		if p != nil && p.Aside != "" {
			// An unfinished restore of another snapshot: its aside
			// directories hold the original data.
			next.Aside = p.Aside
		}
		r.update(func(s *State) { s.Restore = next })
		if err := r.save(ctx); err != nil {
			return r.result(err)
		}
	}
	err = workflow.Run(ctx, r.restoreSteps(open), r.workflowSink(), workflow.RunOptions{Clock: in.clock})
	st, err := r.result(err)
	if err == nil {
		st.Restore = nil
	}
	return st, err
}

// restorableMembers refuses a restore while the configured etcd nodes are
// not exactly the joined members: a node change that did not finish must
// be finished (or undone) first, or the restored cluster would miss a
// member or name one that never ran.
func (r *run) restorableMembers() error {
	st := r.snapshot()
	var names []string
	for _, n := range withRole(r.nodes, model.RoleEtcd) {
		names = append(names, n.Name)
	}
	want, got := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(st.EtcdMembers))
	if !slices.Equal(want, got) {
		return workflow.UserFixable(fmt.Errorf("the configured etcd nodes %v are not the cluster's etcd members %v: retry the unfinished update first, then restore", want, got))
	}
	return nil
}

// restoreSteps is the restore workflow. No step is skipped on a resume:
// stopping is idempotent, a member restored under the same token is
// passed over, and the later steps start and health-check what is there.
func (r *run) restoreSteps(open OpenSnapshot) []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		// The kubelet's release binary the restarted kubelets run (a
		// cluster an earlier release made has none yet).
		{Name: stepArtifacts, Run: r.installArtifacts},
		// The files the components started again read (a cluster made
		// by an earlier singlecloud may lack one).
		{Name: stepCertificates, Run: r.certificates},
		{Name: stepStop, Run: r.stopForRestore},
		{Name: stepRestore, Run: func(ctx context.Context, rep *workflow.Reporter) error {
			return r.restoreMembers(ctx, rep, open)
		}},
		{Name: stepEtcd, Run: r.startRestoredEtcd},
		{Name: stepControlPlane, Run: r.controlPlane},
		{Name: stepWorkers, Run: r.restartWorkers},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// stopForRestore removes the control plane's containers on every
// control-plane node, then etcd on every member (their data stays on the
// hosts); ensure creates them again from their specs.
func (r *run) stopForRestore(ctx context.Context, rep *workflow.Reporter) error {
	err := workflow.ForEach(ctx, withRole(r.nodes, model.RoleControlPlane), nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.removeContainers(ctx, n, containerAPIServer, containerControllerManager, containerScheduler); err != nil {
			return err
		}
		rep.Report(n.Name, "control plane stopped")
		return nil
	})
	if err != nil {
		return err
	}
	return workflow.ForEach(ctx, withRole(r.nodes, model.RoleEtcd), nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.removeContainers(ctx, n, containerEtcd); err != nil {
			return err
		}
		rep.Report(n.Name, "etcd stopped")
		return nil
	})
}

// restoreMembers restores every member's data from the snapshot.
func (r *run) restoreMembers(ctx context.Context, rep *workflow.Reporter, open OpenSnapshot) error {
	p := r.snapshot().Restore
	if p == nil {
		return errors.New("no restore in progress")
	}
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	peers := make([]string, len(etcdNodes))
	for i, n := range etcdNodes {
		peers[i] = n.Name + "=" + etcdPeerURL(n)
	}
	initial := strings.Join(peers, ",")
	return workflow.ForEach(ctx, etcdNodes, nodeConcurrency, func(ctx context.Context, n node) error {
		return r.restoreMember(ctx, rep, n, open, p, initial)
	})
}

// restoreMember puts the snapshot's data in n's etcd data directory: the
// snapshot is uploaded to n, restored by etcdutl in a job container into a
// directory beside it, and swapped into place, the old data moved aside.
// A marker named after the restore's token records that n is done.
func (r *run) restoreMember(ctx context.Context, rep *workflow.Reporter, n node, open OpenSnapshot, p *RestoreProgress, initial string) error {
	// Its scratch is emptied and its data swapped: only in zke's own.
	if err := r.mustOwn(n, n.dir(dirEtcdRestore), n.dir(dirEtcdData)); err != nil {
		return err
	}
	c, err := r.client(n)
	if err != nil {
		return err
	}
	d, err := r.docker(n)
	if err != nil {
		return err
	}
	dir := n.dir(dirEtcdRestore)
	done := path.Join(dir, p.Token+".done")
	res, err := execBounded(ctx, c, "if [ -e "+shellQuote(done)+" ]; then echo done; fi")
	if err != nil {
		return nodeErr(n, fmt.Errorf("check the restore marker: %w", err), "")
	}
	if strings.TrimSpace(string(res.Stdout)) == "done" {
		rep.Report(n.Name, "etcd data already restored")
		return nil
	}
	rc, err := open(ctx)
	if err != nil {
		return fmt.Errorf("open snapshot %s: %w", p.Snapshot, err)
	}
	uctx, cancelUpload := context.WithTimeout(ctx, restoreUploadTimeout)
	err = c.UploadFrom(uctx, path.Join(dir, "snapshot.db"), rc, 0o600)
	cancelUpload()
	rc.Close()
	if err != nil {
		return nodeErr(n, fmt.Errorf("upload snapshot %s: %w", p.Snapshot, err), "check the free space under "+dir+" on "+n.Name)
	}
	if _, err := execBounded(ctx, c, "rm -rf "+shellQuote(path.Join(dir, "data"))); err != nil {
		return nodeErr(n, fmt.Errorf("clear an earlier restore's output: %w", err), "")
	}
	jctx, cancel := context.WithTimeout(ctx, restoreJobTimeout)
	defer cancel()
	jr, err := d.RunJob(jctx, r.restoreJobSpec(n, p, initial))
	if err == nil {
		err = jr.Err()
	}
	if err != nil {
		return nodeErr(n, fmt.Errorf("etcdutl snapshot restore: %w", err), "")
	}
	// The swap runs to its end once begun, even when the restore is
	// cancelled: it is a few renames, bounded.
	if _, err := execBounded(context.WithoutCancel(ctx), c, swapRestoredScript(n, p)); err != nil {
		return nodeErr(n, fmt.Errorf("put the restored data in place: %w", err), "")
	}
	rep.Report(n.Name, "etcd data restored from snapshot "+p.Snapshot+"; the data it replaced is in "+asideDir(n, p))
	return nil
}

// execBounded runs a short command of a member's restore, bounded by
// restoreCommandTimeout.
func execBounded(ctx context.Context, c *transport.Client, cmd string) (transport.ExecResult, error) {
	ctx, cancel := context.WithTimeout(ctx, restoreCommandTimeout)
	defer cancel()
	return c.Exec(ctx, cmd, transport.ExecOptions{})
}

// asideDir is where n keeps the data a run of restores replaced.
func asideDir(n node, p *RestoreProgress) string {
	return path.Join(n.dir(dirEtcdRestore), "before-restore-"+p.Aside)
}

// restoreJobSpec is the job that restores n's member data from
// /restore/snapshot.db into /restore/data, with the restored cluster's
// membership and new token. It runs etcdutl, etcd's offline tool, which
// the etcd image holds beside etcd and etcdctl since etcd 3.5: etcd 3.6's
// etcdctl has no snapshot restore. The snapshot carries the hash etcd's
// snapshot API appends, which etcdutl checks (no --skip-hash-check).
func (r *run) restoreJobSpec(n node, p *RestoreProgress, initial string) runtime.ContainerSpec {
	return runtime.ContainerSpec{
		Name:       containerEtcdRestore,
		Image:      r.images[model.ImageEtcd],
		Entrypoint: []string{"etcdutl"},
		Cmd: []string{
			"snapshot", "restore", "/restore/snapshot.db",
			"--name=" + n.Name,
			"--initial-cluster=" + initial,
			"--initial-cluster-token=" + p.Token,
			"--initial-advertise-peer-urls=" + etcdPeerURL(n),
			"--data-dir=/restore/data",
		},
		NetworkMode: "none",
		Binds:       []string{n.dir(dirEtcdRestore) + ":/restore"},
	}
}

// swapRestoredScript puts the restored data in n's member directory. The
// data there first is moved aside, unless the aside directory of this run
// of restores already exists: then the original data is in it, and what
// is in the member directory is an earlier attempt's restored data, which
// is dropped. Aside directories of earlier, finished restores are
// removed; the uploaded snapshot too; the done marker is written last.
func swapRestoredScript(n node, p *RestoreProgress) string {
	dir := n.dir(dirEtcdRestore)
	return strings.Join([]string{
		"set -e",
		"m=" + shellQuote(path.Join(n.dir(dirEtcdData), "member")),
		"b=" + shellQuote(asideDir(n, p)),
		"d=" + shellQuote(path.Join(dir, "data")),
		`if [ -e "$b" ]; then rm -rf "$m"; elif [ -d "$m" ]; then mv "$m" "$b"; fi`,
		`mv "$d/member" "$m"`,
		`rm -rf "$d" ` + shellQuote(path.Join(dir, "snapshot.db")),
		`for o in ` + shellQuote(dir) + `/before-restore-*; do if [ "$o" != "$b" ]; then rm -rf "$o"; fi; done`,
		"rm -f " + shellQuote(dir) + "/*.done",
		"touch " + shellQuote(path.Join(dir, p.Token+".done")),
	}, "\n")
}

// startRestoredEtcd starts every member on its restored data at once
// (alone, none would reach a quorum), waits for each to be healthy and
// checks that the membership is exactly the configured members.
func (r *run) startRestoredEtcd(ctx context.Context, rep *workflow.Reporter) error {
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	st := r.snapshot()
	err := workflow.ForEach(ctx, etcdNodes, nodeConcurrency, func(ctx context.Context, n node) error {
		return r.ensure(ctx, rep, n, r.etcdSpecOf(n, st))
	})
	if err != nil {
		return err
	}
	for i, n := range etcdNodes {
		if err := poll(ctx, waitOn{rep: rep, node: n.Name}, etcdHealthTimeout, "restored etcd on "+n.Name+" healthy", func(ctx context.Context) (bool, error) {
			return r.etcdHealthy(ctx, n)
		}); err != nil {
			return nodeErr(n, err, r.containerLogsHint(ctx, n, containerEtcd))
		}
		rep.Advance(float64(i+1)/float64(len(etcdNodes)), n.Name, "restored etcd member healthy")
	}
	list, err := r.etcdMembers(ctx, etcdNodes[0])
	if err != nil {
		return nodeErr(etcdNodes[0], fmt.Errorf("list the restored members: %w", err), "")
	}
	if len(list) != len(etcdNodes) {
		return nodeErr(etcdNodes[0], fmt.Errorf("the restored etcd has %d members, want %d", len(list), len(etcdNodes)), "")
	}
	for _, n := range etcdNodes {
		if m := findMember(list, etcdPeerURL(n)); m == nil || m.IsLearner {
			return nodeErr(n, fmt.Errorf("%s is not a voting member of the restored etcd", n.Name), "")
		}
	}
	return nil
}

// restartWorkers recreates every kubelet and kube-proxy, in batches, so
// that none keeps a view of the cluster from before the restore.
func (r *run) restartWorkers(ctx context.Context, rep *workflow.Reporter) error {
	ws := withRole(r.nodes, model.RoleWorker)
	for start := 0; start < len(ws); start += nodeConcurrency {
		for _, n := range ws[start:min(start+nodeConcurrency, len(ws))] {
			if err := r.removeContainers(ctx, n, containerKubelet, containerKubeProxy); err != nil {
				return err
			}
		}
		if err := r.workers(ctx, rep); err != nil {
			return err
		}
	}
	return nil
}
