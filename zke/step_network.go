package zke

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// network sets up the pod network and waits until every worker is Ready:
// flanneld with the plugin's backend (network_backend.go), then, once it
// leased each worker's pod CIDR, the worker's bridge CNI config for that
// CIDR with the lease's MTU, in the directory its containerd reads CNI
// configs from (cniConfPath). A worker of a bridge cluster set up by an
// earlier release is moved to flanneld (migrateBridgeWorker).
func (r *run) network(ctx context.Context, rep *workflow.Reporter) error {
	backend := flannelBackend(r.cfg.Network.Plugin)
	if backend == "" {
		return workflow.UserFixable(fmt.Errorf("network plugin %q cannot be installed by this build; use %q or %q",
			r.cfg.Network.Plugin, model.PluginFlannel, model.PluginBridge))
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	ws := withRole(r.nodes, model.RoleWorker)
	cidrs, err := podCIDRs(ctx, rep, kube, ws)
	if err != nil {
		return err
	}
	if err := r.ensureFlannel(ctx, kube); err != nil {
		return err
	}
	err = workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		lease, err := r.waitFlannelLease(ctx, rep, kube, c, n, cidrs[n.Name])
		if err != nil {
			return err
		}
		conf, err := bridgeCNIConfig(cidrs[n.Name], lease.MTU)
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := c.Upload(ctx, r.cniConfPath(n), conf, pki.PublicMode); err != nil {
			return nodeErr(n, fmt.Errorf("write %s: %w", r.cniConfPath(n), err), "")
		}
		if backend == flannelBackendHostGW {
			if err := migrateBridgeWorker(ctx, kube, c, n); err != nil {
				return err
			}
		}
		// flanneld keeps the routes and the nat rules.
		rep.Report(n.Name, "pod network "+cidrs[n.Name]+" over flannel "+backend+" (MTU "+strconv.Itoa(lease.MTU)+")")
		return nil
	})
	if err != nil {
		return err
	}
	for i, n := range ws {
		err := poll(ctx, waitOn{rep: rep, node: n.Name}, nodeReadyTimeout, n.Name+" Ready", func(ctx context.Context) (bool, error) {
			k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range k.Status.Conditions {
				if c.Type == corev1.NodeReady {
					if c.Status == corev1.ConditionTrue {
						return true, nil
					}
					return false, fmt.Errorf("%s: %s", c.Reason, c.Message)
				}
			}
			return false, fmt.Errorf("no Ready condition yet")
		})
		if err != nil {
			return nodeErr(n, err, r.containerLogsHint(ctx, n, containerKubelet))
		}
		rep.Advance(float64(i+1)/float64(len(ws)), n.Name, "node Ready")
	}
	return nil
}

// podCIDRs waits until the controller manager allocated every worker of
// ws its pod CIDR and returns them by node name.
func podCIDRs(ctx context.Context, rep *workflow.Reporter, kube kubeclient.Interface, ws []node) (map[string]string, error) {
	cidrs := map[string]string{}
	for _, n := range ws {
		err := poll(ctx, waitOn{rep: rep, node: n.Name}, nodeReadyTimeout, "pod CIDR of "+n.Name, func(ctx context.Context) (bool, error) {
			k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if k.Spec.PodCIDR == "" {
				return false, fmt.Errorf("the controller manager has not allocated a pod CIDR to %s yet", n.Name)
			}
			cidrs[n.Name] = k.Spec.PodCIDR
			return true, nil
		})
		if err != nil {
			return nil, nodeErr(n, err, "")
		}
	}
	return cidrs, nil
}

// waitFlannelLease waits until flanneld on n wrote its lease of podCIDR;
// a failure says what the flannel pod on n is doing.
func (r *run) waitFlannelLease(ctx context.Context, rep *workflow.Reporter, kube kubeclient.Interface, c *transport.Client, n node, podCIDR string) (flannelLease, error) {
	var lease flannelLease
	err := poll(ctx, waitOn{rep: rep, node: n.Name}, nodeReadyTimeout, "flannel on "+n.Name, func(ctx context.Context) (bool, error) {
		l, err := readFlannelLease(ctx, c, podCIDR)
		if err == nil {
			err = flannelRunsOn(ctx, kube, n.Name)
		}
		if err != nil {
			if why := flannelPodProblem(ctx, kube, n.Name); why != "" {
				err = fmt.Errorf("%w; %s", err, why)
			}
			return false, err
		}
		lease = l
		return true, nil
	})
	if err != nil {
		hint := "flanneld needs its image " + r.images[model.ImageFlannel] + " on every node"
		if flannelBackend(r.cfg.Network.Plugin) == flannelBackendVXLAN {
			hint = "flanneld needs UDP port 8472 open between the nodes, and its image " + r.images[model.ImageFlannel] + " on every node"
		}
		return lease, nodeErr(n, err, hint)
	}
	return lease, nil
}
