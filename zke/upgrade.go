package zke

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// upgradeCordoned marks a Node that an upgrade cordoned, so that a
// resumed upgrade uncordons it and never one an admin cordoned.
const upgradeCordoned = "zke.zcloud.cn/upgrade-cordoned"

// Upgrade moves an installed cluster to cfg's Kubernetes version (and
// images) one node at a time, keeping the cluster serving: the images are
// put on every node first; then each etcd member whose container is not on
// its new spec is restarted on it, only while every other member is
// healthy, and healthy itself before the next; then each control-plane
// node's kube-apiserver, controller manager and scheduler, health-gated
// (with two or more control-plane nodes the API stays up); then the
// workers in batches of cfg's upgrade.maxUnavailable: cordoned, drained
// through the Eviction API (PodDisruptionBudgets respected), their kubelet
// and kube-proxy recreated, Ready at the new version, uncordoned. A node
// already on its new specs is passed over, so a resumed or repeated
// upgrade carries on where it stopped. Reverting is an Upgrade to the
// previous version.
func (in *Installer) Upgrade(ctx context.Context, cfg model.ClusterConfig, prev State, sink Sink) (State, error) {
	if prev.Applied == nil || prev.PKI == nil {
		return prev, workflow.UserFixable(errors.New("the cluster was never created: there is nothing to upgrade; retry the create"))
	}
	r, err := in.newRun(cfg, prev, sink)
	if err != nil {
		return prev, err
	}
	defer r.close()
	err = workflow.Run(ctx, r.upgradeSteps(), r.workflowSink(), workflow.RunOptions{Clock: in.clock})
	return r.result(err)
}

// upgradeSteps is the upgrade workflow; every step checks what is already
// on its new spec and passes over it.
func (r *run) upgradeSteps() []workflow.Step {
	return r.prepare([]workflow.Step{
		{Name: stepConnect, Run: r.connect},
		{Name: stepPreflight, Run: r.preflight},
		{Name: stepArtifacts, Run: r.installArtifacts},
		// The files the new specs read (a cluster made by an earlier
		// singlecloud may lack one, like kube-ca-signer.pem).
		{Name: stepCertificates, Run: r.certificates},
		{Name: stepImages, Run: r.pullImages},
		{Name: stepEtcd, Run: r.upgradeEtcd},
		{Name: stepControlPlane, Run: r.controlPlane},
		{Name: stepWorkers, Run: r.upgradeWorkers},
		{Name: stepKubeconfig, Run: r.writeKubeconfig},
	})
}

// upToDate reports whether n runs spec's container as spec says.
func (r *run) upToDate(ctx context.Context, n node, spec runtime.ContainerSpec) (bool, error) {
	d, err := r.docker(n)
	if err != nil {
		return false, err
	}
	want, err := runtime.SpecHash(spec, r.cfg.Name)
	if err != nil {
		return false, err
	}
	info, err := d.Inspect(ctx, spec.Name)
	if errors.Is(err, runtime.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, nodeErr(n, fmt.Errorf("inspect %s: %w", spec.Name, err), "")
	}
	return info.Running && info.SpecHash() == want, nil
}

// upgradeEtcd restarts the etcd members that are not on their new spec,
// one at a time, quorum kept.
func (r *run) upgradeEtcd(ctx context.Context, rep *workflow.Reporter) error {
	etcdNodes := withRole(r.nodes, model.RoleEtcd)
	if _, err := r.etcdVersionsFor(ctx, rep, etcdNodes); err != nil {
		return err
	}
	st := r.snapshot()
	for i, n := range etcdNodes {
		ok, err := r.upToDate(ctx, n, r.etcdSpecOf(n, st))
		if err != nil {
			return err
		}
		if !ok {
			if err := r.othersHealthy(ctx, n, etcdNodes); err != nil {
				return err
			}
			r.handOffLeadership(ctx, rep, n, etcdNodes)
			if err := r.etcdMemberUp(ctx, rep, n, etcdNodes); err != nil {
				return err
			}
		}
		rep.Advance(float64(i+1)/float64(len(etcdNodes)), n.Name, "etcd member on its new version, healthy")
	}
	return nil
}

// upgradeWorkers upgrades the workers in batches of the config's
// maxUnavailable.
func (r *run) upgradeWorkers(ctx context.Context, rep *workflow.Reporter) error {
	ws := withRole(r.nodes, model.RoleWorker)
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	batch := r.cfg.UpgradeBatch()
	for start := 0; start < len(ws); start += batch {
		group := ws[start:min(start+batch, len(ws))]
		err := workflow.ForEach(ctx, group, batch, func(ctx context.Context, n node) error {
			return r.upgradeWorker(ctx, rep, kube, n)
		})
		if err != nil {
			return err
		}
		rep.Advance(float64(start+len(group))/float64(len(ws)), group[len(group)-1].Name, "workers upgraded")
	}
	return nil
}

// upgradeWorker upgrades one worker: cordon and drain, new kubelet and
// kube-proxy, Ready at the new version, uncordon. A worker already on its
// new specs is only uncordoned if an interrupted upgrade left it so.
func (r *run) upgradeWorker(ctx context.Context, rep *workflow.Reporter, kube kubeclient.Interface, n node) error {
	cri, err := r.resolveSocket(ctx, n, n.ContainerdSocket)
	if err != nil {
		return err
	}
	specs := []runtime.ContainerSpec{r.kubeletSpec(n, cri), r.kubeProxySpec(n)}
	current := true
	for _, s := range specs {
		ok, err := r.upToDate(ctx, n, s)
		if err != nil {
			return err
		}
		current = current && ok
	}
	if !current {
		if err := markCordoned(ctx, kube, n.Name); err != nil {
			return nodeErr(n, err, "")
		}
		d := drainer{kube: kube, rep: rep, interval: pollInterval, timeout: drainTimeout}
		if _, err := d.evictAll(ctx, n.Name); err != nil {
			return nodeErr(n, fmt.Errorf("drain before its upgrade: %w", err), "")
		}
		for _, s := range specs {
			if err := r.ensure(ctx, rep, n, s); err != nil {
				return err
			}
		}
	}
	want := r.cfg.KubernetesVersion
	if err := poll(ctx, waitOn{rep: rep, node: n.Name}, nodeReadyTimeout, "Node "+n.Name+" Ready at "+want, func(ctx context.Context) (bool, error) {
		k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if v := k.Status.NodeInfo.KubeletVersion; v != want {
			return false, fmt.Errorf("its kubelet reports %s", v)
		}
		return nodeReady(k), errors.New("not Ready")
	}); err != nil {
		return r.pathErr(ctx, n, err, containerKubelet)
	}
	if err := uncordon(ctx, kube, n.Name); err != nil {
		return nodeErr(n, err, "")
	}
	if !current {
		rep.Report(n.Name, "upgraded to "+want+", Ready, uncordoned")
	}
	return nil
}

// nodeReady reports whether k's Ready condition is True.
func nodeReady(k *corev1.Node) bool {
	for _, c := range k.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// markCordoned notes on the Node that the upgrade cordons it.
func markCordoned(ctx context.Context, kube kubeclient.Interface, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + upgradeCordoned + `":"true"}}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark the node cordoned by the upgrade: %w", err)
	}
	return nil
}

// uncordon makes the Node schedulable again if the upgrade cordoned it.
func uncordon(ctx context.Context, kube kubeclient.Interface, name string) error {
	k, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	if k.Annotations[upgradeCordoned] == "" {
		return nil
	}
	patch := []byte(`{"spec":{"unschedulable":false},"metadata":{"annotations":{"` + upgradeCordoned + `":null}}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("uncordon: %w", err)
	}
	return nil
}
