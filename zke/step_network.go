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

// routeProto tags the routes zke adds, so that removal deletes exactly
// those (ip route flush proto 77).
const routeProto = "77"

// network sets up the pod network and waits until every worker is Ready.
// Each worker gets a bridge CNI config for the pod CIDR the controller
// manager allocated it, in the directory its containerd reads CNI configs
// from (cniConfPath). Between the workers, the bridge plugin routes each
// pod CIDR through its worker's internal address (host-gw: the nodes
// share a layer-2 network) and masqChain masquerades; flannel tunnels
// over VXLAN and masquerades itself (network_flannel.go), and the bridge
// config takes flannel's MTU.
func (r *run) network(ctx context.Context, rep *workflow.Reporter) error {
	flannel := r.cfg.Network.Plugin == model.PluginFlannel
	if !flannel && r.cfg.Network.Plugin != model.PluginBridge {
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
	if flannel {
		if err := r.ensureFlannel(ctx, kube); err != nil {
			return err
		}
	}
	err = workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		mtu := 0
		if flannel {
			lease, err := r.waitFlannelLease(ctx, rep, kube, c, n, cidrs[n.Name])
			if err != nil {
				return err
			}
			mtu = lease.MTU
		}
		conf, err := bridgeCNIConfig(cidrs[n.Name], mtu)
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := c.Upload(ctx, r.cniConfPath(n), conf, pki.PublicMode); err != nil {
			return nodeErr(n, fmt.Errorf("write %s: %w", r.cniConfPath(n), err), "")
		}
		if flannel {
			// flanneld keeps the routes and the nat rules.
			rep.Report(n.Name, "pod network "+cidrs[n.Name]+" over flannel (MTU "+strconv.Itoa(mtu)+")")
			return nil
		}
		res, err := c.Exec(ctx, r.podNetworkScript(n, ws, cidrs), transport.ExecOptions{})
		if err != nil {
			return nodeErr(n, fmt.Errorf("add pod network routes and nat rules: %w", err),
				"check that the nodes share a layer-2 network (host-gw routing: else use the flannel plugin) and have iptables-restore")
		}
		if err := notePodRoutesBoot(ctx, kube, n, parseBootID(string(res.Stdout))); err != nil {
			return err
		}
		rep.Report(n.Name, "pod network "+cidrs[n.Name])
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
		return lease, nodeErr(n, err, "flanneld needs UDP port 8472 open between the nodes, and its image "+r.images[model.ImageFlannel]+" on every node")
	}
	return lease, nil
}
