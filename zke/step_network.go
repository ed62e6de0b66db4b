package zke

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// routeProto tags the routes zke adds, so that removal deletes exactly
// those (ip route flush proto 77).
const routeProto = "77"

// network sets up the pod network and waits until every worker is Ready.
// The bridge plugin needs no images: each worker gets a bridge CNI config
// for the pod CIDR the controller manager allocated it, in the directory
// its containerd reads CNI configs from (cniConfPath), and a route to
// every other worker's pod CIDR through that worker's internal address
// (host-gw).
func (r *run) network(ctx context.Context, rep *workflow.Reporter) error {
	if r.cfg.Network.Plugin != model.PluginBridge {
		return workflow.UserFixable(fmt.Errorf("network plugin %q cannot be installed by this build: its images are not bundled; use %q (needs no images)",
			r.cfg.Network.Plugin, model.PluginBridge))
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	ws := withRole(r.nodes, model.RoleWorker)
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
			return nodeErr(n, err, "")
		}
	}
	err = workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		conf, err := bridgeCNIConfig(cidrs[n.Name])
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := c.Upload(ctx, r.cniConfPath(n), conf, pki.PublicMode); err != nil {
			return nodeErr(n, fmt.Errorf("write %s: %w", r.cniConfPath(n), err), "")
		}
		if _, err := c.Exec(ctx, r.podNetworkScript(n, ws, cidrs), transport.ExecOptions{}); err != nil {
			return nodeErr(n, fmt.Errorf("add pod network routes and nat rules: %w", err),
				"check that the nodes share a layer-2 network (host-gw routing) and have iptables-restore")
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
