package zke

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// The Verify of the steps that end in the cluster's API (see verify.go).

// verifyWorkers checks that every worker has its kubelet configuration,
// runs its kubelet (with the containerd socket as the node resolves it
// now) and kube-proxy with their current specs, that kube-proxy answers
// healthy, and that the kubelet has registered its Node.
func (r *run) verifyWorkers(ctx context.Context, rep *workflow.Reporter) error {
	ws := withRole(r.nodes, model.RoleWorker)
	if len(ws) == 0 {
		return nil
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	return workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		kc, err := kubeletConfig(n, r.cfg, r.cgroupDriver(n), r.kubeletResolvConf(n))
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := r.filesMatch(ctx, n, map[string]string{kubeletConfigFile(n): contentHash(kc)}); err != nil {
			return err
		}
		cri, err := r.resolveSocket(ctx, n, n.ContainerdSocket)
		if err != nil {
			return err
		}
		if err := r.containerCurrent(ctx, n, r.kubeletSpec(n, cri)); err != nil {
			return err
		}
		if err := r.containerCurrent(ctx, n, r.kubeProxySpec(n)); err != nil {
			return err
		}
		if ok, err := r.localHTTPHealthz(ctx, n, portKubeProxyHealth); !ok {
			return nodeErr(n, fmt.Errorf("kube-proxy /healthz: %w", err), "")
		}
		if _, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return stale(n, "its kubelet has not registered the Node")
			}
			return nodeErr(n, fmt.Errorf("get node: %w", err), "")
		}
		return nil
	})
}

// verifyNetwork checks that flannel's objects are this config's, and
// that every worker is Ready with a pod CIDR, that flanneld on it leased
// that CIDR, that it holds the bridge CNI config for it (with the lease's
// MTU), and, with host-gw, a route to every other worker's pod CIDR
// through that worker.
func (r *run) verifyNetwork(ctx context.Context, rep *workflow.Reporter) error {
	backend := flannelBackend(r.cfg.Network.Plugin)
	if backend == "" {
		return fmt.Errorf("network plugin %q is not installed by this build", r.cfg.Network.Plugin)
	}
	ws := withRole(r.nodes, model.RoleWorker)
	if len(ws) == 0 {
		return nil
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	if err := r.verifyFlannelObjects(ctx, kube); err != nil {
		return err
	}
	cidrs := map[string]string{}
	for _, n := range ws {
		k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return nodeErr(n, fmt.Errorf("get node: %w", err), "")
		}
		if k.Spec.PodCIDR == "" {
			return stale(n, "has no pod CIDR")
		}
		if why := notReady(k); why != "" {
			return stale(n, "is not Ready (%s)", why)
		}
		cidrs[n.Name] = k.Spec.PodCIDR
	}
	return workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
		defer cancel()
		lease, err := readFlannelLease(ctx, c, cidrs[n.Name])
		if err == nil {
			err = flannelRunsOn(ctx, kube, n.Name)
		}
		if err != nil {
			return stale(n, "%v", err)
		}
		conf, err := bridgeCNIConfig(cidrs[n.Name], lease.MTU)
		if err != nil {
			return nodeErr(n, err, "")
		}
		res, err := c.Exec(ctx, networkStateScript(r.cniConfPath(n), r.cfg.ClusterCIDR), transport.ExecOptions{})
		if err != nil {
			return nodeErr(n, fmt.Errorf("read the pod network config and routes: %w", err), "")
		}
		hash, routes, _ := strings.Cut(string(res.Stdout), "\n")
		if strings.TrimSpace(hash) != contentHash(conf) {
			return stale(n, "%s is missing or differs", r.cniConfPath(n))
		}
		if backend != flannelBackendHostGW {
			return nil
		}
		want := map[string]string{}
		for _, m := range ws {
			if m.Name != n.Name {
				want[cidrs[m.Name]] = canonicalAddr(m.InternalAddress)
			}
		}
		if missing := missingRoutes(routes, want); len(missing) > 0 {
			return stale(n, "lacks the pod network routes %s", strings.Join(missing, ", "))
		}
		return nil
	})
}

// networkStateScript prints the hash of the bridge CNI config at conf (or
// "missing") on its first line, then the node's routes into clusterCIDR.
func networkStateScript(conf, clusterCIDR string) string {
	family := "-4"
	if p, err := netip.ParsePrefix(clusterCIDR); err == nil && p.Addr().Is6() {
		family = "-6"
	}
	return `h=$(sha256sum 2>/dev/null < ` + shellQuote(conf) + `) || h=` + hashMissing + `
echo "${h%% *}"
ip ` + family + ` route show root ` + shellQuote(clusterCIDR) + ` 2>/dev/null || true`
}

// missingRoutes lists, sorted, the routes of want (destination → gateway)
// that routes (ip route show output) lacks, as "dst via gw".
func missingRoutes(routes string, want map[string]string) []string {
	have := map[string]bool{}
	for _, ln := range strings.Split(routes, "\n") {
		f := strings.Fields(ln)
		if len(f) >= 3 && f[1] == "via" {
			have[f[0]+" via "+f[2]] = true
		}
	}
	var out []string
	for dst, gw := range want {
		if r := dst + " via " + gw; !have[r] {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// notReady says why k is not Ready ("" when it is).
func notReady(k *corev1.Node) string {
	for _, c := range k.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return ""
			}
			return strings.TrimSpace(c.Reason + " " + c.Message)
		}
	}
	return "no Ready condition"
}

// verifyAddons checks the addons through the cluster's API (see
// addonsCurrent).
func (r *run) verifyAddons(ctx context.Context, rep *workflow.Reporter) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	return r.addonsCurrent(ctx, kube)
}

// addonsCurrent checks that the kubelet API binding exists, that every
// worker's Node carries its role labels, configured labels and taints,
// and that CoreDNS is in place (its RBAC, its Corefile, its Deployment
// with the configured image, rolled out and available, and the kube-dns
// Service on the cluster DNS IP).
func (r *run) addonsCurrent(ctx context.Context, kube kubeclient.Interface) error {
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, pki.KubeletAPIAdminBinding, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("cluster role binding %s: %w", pki.KubeletAPIAdminBinding, err)
	}
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return nodeErr(n, fmt.Errorf("get node: %w", err), "")
		}
		if why := labelsAndTaintsDiffer(k, n); why != "" {
			return stale(n, "%s", why)
		}
	}
	sys := metav1.NamespaceSystem
	if _, err := kube.CoreV1().ServiceAccounts(sys).Get(ctx, corednsName, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("coredns service account: %w", err)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, "system:"+corednsName, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("coredns cluster role: %w", err)
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, "system:"+corednsName, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("coredns cluster role binding: %w", err)
	}
	cm, err := kube.CoreV1().ConfigMaps(sys).Get(ctx, corednsName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("coredns config map: %w", err)
	}
	if cm.Data["Corefile"] != r.corefile() {
		return fmt.Errorf("the Corefile differs: %w", errStale)
	}
	d, err := kube.AppsV1().Deployments(sys).Get(ctx, corednsName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("coredns deployment: %w", err)
	}
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Image != r.images[model.ImageCoreDNS] {
		return fmt.Errorf("the coredns deployment runs another image: %w", errStale)
	}
	if ok, why := deploymentAvailable(d); !ok {
		return fmt.Errorf("coredns: %s: %w", why, errStale)
	}
	svc, err := kube.CoreV1().Services(sys).Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube-dns service: %w", err)
	}
	if svc.Spec.ClusterIP != r.cfg.ClusterDNSServiceIP {
		return fmt.Errorf("kube-dns has cluster IP %s, not %s: %w", svc.Spec.ClusterIP, r.cfg.ClusterDNSServiceIP, errStale)
	}
	return nil
}

// labelsAndTaintsDiffer says how k lacks what labelAndTaint gives n ("":
// it does not).
func labelsAndTaintsDiffer(k *corev1.Node, n node) string {
	for _, role := range n.Roles {
		if key := "node-role.kubernetes.io/" + string(role); k.Labels[key] != "true" {
			return "lacks the label " + key
		}
	}
	for key, v := range n.Labels {
		if got, ok := k.Labels[key]; !ok || got != v {
			return "lacks the label " + key + "=" + v
		}
	}
	for _, t := range n.Taints {
		found := false
		for _, kt := range k.Spec.Taints {
			if kt.Key == t.Key && kt.Value == t.Value && string(kt.Effect) == t.Effect {
				found = true
				break
			}
		}
		if !found {
			return "lacks the taint " + t.Key + "=" + t.Value + ":" + t.Effect
		}
	}
	if k.Annotations[zkeTaintsAnnotation] != zkeTaintsValue(n.Taints) {
		return "its taints are not as zke last set them"
	}
	return ""
}

// verifyDrain checks that every removed node is gone from Kubernetes.
func (r *run) verifyDrain(ctx context.Context, rep *workflow.Reporter) error {
	removed := r.removedNodes()
	if len(removed) == 0 {
		return nil
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	return drainedCurrent(ctx, kube, removed)
}

// drainedCurrent checks that no node of removed is a Kubernetes Node.
func drainedCurrent(ctx context.Context, kube kubeclient.Interface, removed []node) error {
	for _, n := range removed {
		_, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nodeErr(n, fmt.Errorf("get node: %w", err), "")
		default:
			return stale(n, "is still a Kubernetes node")
		}
	}
	return nil
}
