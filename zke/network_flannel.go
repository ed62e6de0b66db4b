package zke

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// flanneld from flannel's published image, which runs the pod network of
// both plugins (network_backend.go says which backend each uses), as a
// DaemonSet on every node with a kubelet, as flannel's own
// kube-flannel.yml deploys it (its namespace, service account, RBAC and
// net-conf.json ConfigMap). flanneld takes each node's pod CIDR from the
// Node (--kube-subnet-mgr), keeps the routes to the other nodes' pod
// CIDRs (through its flannel.1 device with VXLAN, through the nodes'
// addresses with host-gw), and writes what it chose to
// /run/flannel/subnet.env.
//
// zke writes the node's CNI config itself, the bridge config with the
// lease's MTU: flannel's own CNI plugin does no more than that (it
// delegates to bridge with host-local IPAM on the node's subnet), and the
// plugins zke installs (cni_plugins.go) include bridge. flanneld
// masquerades (--ip-masq: what pods send out of the pod network, never
// pod to pod), so that, like its routes, the rules come back when its pod
// restarts after a reboot.
const (
	flannelNamespace = "kube-flannel"
	flannelName      = "flannel"
	// flannelDaemonSet is the DaemonSet's name in kube-flannel.yml.
	flannelDaemonSet = "kube-flannel-ds"
	// flannelConfigMap holds net-conf.json.
	flannelConfigMap = "kube-flannel-cfg"
	// flannelRunDir is where flanneld writes subnet.env on each node.
	flannelRunDir = "/run/flannel"
	// flannelSubnetEnv is the file flanneld writes its lease to.
	flannelSubnetEnv = flannelRunDir + "/subnet.env"
	// flannelDevice is the VXLAN device flanneld makes on each node
	// (flannelDevice6 on an IPv6 pod network).
	flannelDevice  = "flannel.1"
	flannelDevice6 = "flannel-v6.1"
	// flannelPublicIPAnnotation is written on its Node by the flanneld
	// that leased the node's subnet: a lease file without it may be left
	// from another cluster.
	flannelPublicIPAnnotation = "flannel.alpha.coreos.com/public-ip"
	// flanneldPath is flanneld in flannel's image.
	flanneldPath = "/opt/bin/flanneld"
)

// flannelNetConf is net-conf.json for the cluster's pod network: the
// cluster CIDR of its address family, backend (flannelBackend), iptables
// (not nftables, whose rules kube-proxy's iptables mode would not see).
func flannelNetConf(clusterCIDR, backend string) (string, error) {
	p, err := netip.ParsePrefix(clusterCIDR)
	if err != nil {
		return "", fmt.Errorf("clusterCidr %q: %w", clusterCIDR, err)
	}
	if backend != flannelBackendVXLAN && backend != flannelBackendHostGW {
		return "", fmt.Errorf("flannel backend %q: want %s or %s", backend, flannelBackendVXLAN, flannelBackendHostGW)
	}
	conf := map[string]any{"Backend": map[string]any{"Type": backend}, "EnableNFTables": false}
	if p.Addr().Is6() {
		conf["EnableIPv4"], conf["EnableIPv6"], conf["IPv6Network"] = false, true, p.String()
	} else {
		conf["EnableIPv4"], conf["Network"] = true, p.String()
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode net-conf.json: %w", err)
	}
	return string(b) + "\n", nil
}

// flannelNetConf is the cluster's net-conf.json.
func (r *run) flannelNetConf() (string, error) {
	return flannelNetConf(r.cfg.ClusterCIDR, flannelBackend(r.cfg.Network.Plugin))
}

// ensureFlannel creates or updates flannel's objects, as kube-flannel.yml
// has them. It does not wait for the pods: the network step waits for
// each node's lease.
func (r *run) ensureFlannel(ctx context.Context, kube kubeclient.Interface) error {
	netConf, err := r.flannelNetConf()
	if err != nil {
		return err
	}
	labels := map[string]string{"app": flannelName, "tier": "node", "io.zke.managed": "true"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: flannelNamespace, Labels: labels}
	}
	steps := []func() error{
		func() error {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: flannelNamespace, Labels: map[string]string{
				"io.zke.managed": "true", "pod-security.kubernetes.io/enforce": "privileged"}}}
			_, err := upsert(ctx, kube.CoreV1().Namespaces(), ns)
			return err
		},
		func() error {
			_, err := upsert(ctx, kube.CoreV1().ServiceAccounts(flannelNamespace), &corev1.ServiceAccount{ObjectMeta: meta(flannelName)})
			return err
		},
		func() error {
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: flannelName, Labels: labels}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
			}}
			_, err := upsert(ctx, kube.RbacV1().ClusterRoles(), cr)
			return err
		},
		func() error {
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: flannelName, Labels: labels},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: flannelName},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: flannelName, Namespace: flannelNamespace}}}
			_, err := upsert(ctx, kube.RbacV1().ClusterRoleBindings(), crb)
			return err
		},
		func() error {
			cm := &corev1.ConfigMap{ObjectMeta: meta(flannelConfigMap), Data: map[string]string{"net-conf.json": netConf}}
			_, err := upsert(ctx, kube.CoreV1().ConfigMaps(flannelNamespace), cm)
			return err
		},
		func() error {
			_, err := upsert(ctx, kube.AppsV1().DaemonSets(flannelNamespace), r.flannelDaemonSet(labels))
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("deploy flannel: %w", err)
		}
	}
	return nil
}

// flannelDaemonSet is kube-flannel.yml's DaemonSet without its init
// containers (zke writes the CNI config and installs the plugins): on
// every node, tolerating every taint, in the host's network with
// NET_ADMIN and NET_RAW, on the interface that holds the node's address
// (the kubelet's --node-ip, the pod's host IP: flannelIface), so that a
// node with several interfaces tunnels over the one the cluster knows it
// by.
func (r *run) flannelDaemonSet(labels map[string]string) *appsv1.DaemonSet {
	hostPath := func(p string, t corev1.HostPathType) corev1.VolumeSource {
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &t}}
	}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	selector := map[string]string{"app": flannelName}
	env := []corev1.EnvVar{field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"),
		field("HOST_IP", "status.hostIP"), {Name: "EVENT_QUEUE_DEPTH", Value: "5000"}}
	env = append(env, r.flannelAPIEnv()...)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: flannelDaemonSet, Namespace: flannelNamespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					HostNetwork:        true,
					PriorityClassName:  "system-node-critical",
					ServiceAccountName: flannelName,
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name:    "kube-flannel",
						Image:   r.images[model.ImageFlannel],
						Command: []string{flanneldPath},
						Args:    []string{"--ip-masq", "--kube-subnet-mgr", "--iface=" + r.flannelIface()},
						Env:     env,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("50Mi")}},
						SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: flannelRunDir},
							{Name: "flannel-cfg", MountPath: "/etc/kube-flannel/"}, {Name: "xtables-lock", MountPath: "/run/xtables.lock"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "run", VolumeSource: hostPath(flannelRunDir, corev1.HostPathDirectoryOrCreate)},
						{Name: "flannel-cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: flannelConfigMap}}}},
						{Name: "xtables-lock", VolumeSource: hostPath("/run/xtables.lock", corev1.HostPathFileOrCreate)},
					},
				},
			},
		},
	}
}

// flannelAPIEnv points flanneld's in-cluster client at the API server
// the node's kubelet and kube-proxy use (apiServerURL), not at the
// kubernetes Service: a pod in the host's network reaches a Service IP
// only when the host has a route covering it (a host with no default
// route, as air-gapped ones often are, has none), and only once
// kube-proxy wrote its rules; the pod network should need neither.
// Variables the pod spec sets win over the ones the kubelet injects for
// Services.
func (r *run) flannelAPIEnv() []corev1.EnvVar {
	raw, err := r.apiServerURL()
	if err != nil {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		return nil
	}
	return []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: u.Hostname()}, {Name: "KUBERNETES_SERVICE_PORT", Value: u.Port()}}
}

// hasEnv says whether env sets every variable of want to its value.
func hasEnv(env, want []corev1.EnvVar) bool {
	for _, w := range want {
		if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == w.Name && e.Value == w.Value && e.ValueFrom == nil }) {
			return false
		}
	}
	return true
}

// flannelIface is the interface flanneld tunnels over: the cluster's
// network.iface (validated as an interface name) when set, else the one
// holding the node's address. host-gw always routes through the node's
// address, the one the cluster knows it by (verify, the segment check
// and clean-up name the routes by it), so network.iface is VXLAN's only.
func (r *run) flannelIface() string {
	if r.cfg.Network.Iface != "" && flannelBackend(r.cfg.Network.Plugin) == flannelBackendVXLAN {
		return r.cfg.Network.Iface
	}
	return "$(HOST_IP)"
}

// flannelLease is what flanneld wrote to a node's subnet.env.
type flannelLease struct {
	// Subnet is the node's pod network, as flanneld took it from the
	// Node (FLANNEL_SUBNET, or FLANNEL_IPV6_SUBNET on IPv6).
	Subnet netip.Prefix
	// MTU is the pod network's MTU: the interface's, less VXLAN's
	// overhead with that backend.
	MTU int
}

// parseFlannelLease reads subnet.env. It fails when the file holds no
// subnet or MTU.
func parseFlannelLease(env string) (flannelLease, error) {
	var l flannelLease
	for _, line := range strings.Split(env, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		switch k {
		case "FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET":
			if p, err := netip.ParsePrefix(v); err == nil {
				l.Subnet = p.Masked()
			}
		case "FLANNEL_MTU":
			if m, err := strconv.Atoi(v); err == nil && m >= 576 && m <= 65535 {
				l.MTU = m
			}
		}
	}
	if !l.Subnet.IsValid() || l.MTU == 0 {
		return l, fmt.Errorf("%s holds no subnet and MTU yet", flannelSubnetEnv)
	}
	return l, nil
}

// readFlannelLease reads n's lease over c; it fails until flanneld
// wrote one for podCIDR.
func readFlannelLease(ctx context.Context, c *transport.Client, podCIDR string) (flannelLease, error) {
	res, err := c.Exec(ctx, "cat "+flannelSubnetEnv+" 2>/dev/null || true", transport.ExecOptions{})
	if err != nil {
		return flannelLease{}, fmt.Errorf("read %s: %w", flannelSubnetEnv, err)
	}
	l, err := parseFlannelLease(string(res.Stdout))
	if err != nil {
		return l, err
	}
	if want, err := netip.ParsePrefix(podCIDR); err != nil || want.Masked() != l.Subnet {
		return l, fmt.Errorf("%s names %s, not the node's pod CIDR %s: it is another cluster's, and this cluster's flanneld replaces it when it starts (kubectl -n %s get pods -o wide)",
			flannelSubnetEnv, l.Subnet, podCIDR, flannelNamespace)
	}
	return l, nil
}

// flannelPodProblem says why the flannel pod on node is not running, from
// its status (an image that cannot be pulled, a crash), or "" when it
// cannot tell.
func flannelPodProblem(ctx context.Context, kube kubeclient.Interface, node string) string {
	pods, err := kube.CoreV1().Pods(flannelNamespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return ""
	}
	if len(pods.Items) == 0 {
		return "no flannel pod is on " + node + " yet (kubectl -n " + flannelNamespace + " describe ds " + flannelDaemonSet + ")"
	}
	p := pods.Items[0]
	for _, q := range pods.Items {
		if q.DeletionTimestamp == nil {
			p = q
			break
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Waiting != nil:
			return fmt.Sprintf("flannel pod %s: %s: %s", p.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Terminated != nil:
			return fmt.Sprintf("flannel pod %s exited: %s: %s (kubectl -n %s logs %s)", p.Name, s.State.Terminated.Reason, s.State.Terminated.Message, flannelNamespace, p.Name)
		}
	}
	return fmt.Sprintf("flannel pod %s is %s (kubectl -n %s logs %s)", p.Name, p.Status.Phase, flannelNamespace, p.Name)
}

// flannelCleanup is the part of cleanScript that removes what flanneld
// made on a node: its VXLAN device (with the routes through it), its
// lease, and its iptables chains with their jumps
// (flanneld comments its jumps, and a delete must name the comment).
func flannelCleanup() string {
	return fmt.Sprintf(`ip link del %[1]s 2>/dev/null || true
ip link del %[3]s 2>/dev/null || true
rm -f %[2]s
for t in iptables ip6tables; do command -v "$t" >/dev/null 2>&1 || continue
  i=0; while [ "$i" -lt 16 ] && { "$t" -w -t filter -D FORWARD -m comment --comment "flanneld forward" -j FLANNEL-FWD 2>/dev/null ||
    "$t" -w -t filter -D FORWARD -j FLANNEL-FWD 2>/dev/null; }; do i=$((i+1)); done
  "$t" -w -t filter -F FLANNEL-FWD 2>/dev/null; "$t" -w -t filter -X FLANNEL-FWD 2>/dev/null
  i=0; while [ "$i" -lt 16 ] && { "$t" -w -t nat -D POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG 2>/dev/null ||
    "$t" -w -t nat -D POSTROUTING -j FLANNEL-POSTRTG 2>/dev/null; }; do i=$((i+1)); done
  "$t" -w -t nat -F FLANNEL-POSTRTG 2>/dev/null; "$t" -w -t nat -X FLANNEL-POSTRTG 2>/dev/null
done
true`, flannelDevice, flannelSubnetEnv, flannelDevice6)
}

// flannelRunsOn checks that this cluster's flanneld registered on node:
// its public-ip (public-ipv6) annotation on the Node, which only a flanneld of this
// cluster writes (a lease file alone may be another cluster's).
func flannelRunsOn(ctx context.Context, kube kubeclient.Interface, node string) error {
	k, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", node, err)
	}
	if k.Annotations[flannelPublicIPAnnotation] == "" && k.Annotations[flannelPublicIPAnnotation+"v6"] == "" {
		return fmt.Errorf("flanneld has not registered on %s yet (no %s annotation)", node, flannelPublicIPAnnotation)
	}
	return nil
}

// verifyFlannelObjects checks that flannel's DaemonSet runs the image and
// arguments this config gives it and that its net-conf.json is this
// config's: an update that changed them, or a hand edit, is applied again.
func (r *run) verifyFlannelObjects(ctx context.Context, kube kubeclient.Interface) error {
	ds, err := kube.AppsV1().DaemonSets(flannelNamespace).Get(ctx, flannelDaemonSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("flannel's DaemonSet %s/%s is missing: %w", flannelNamespace, flannelDaemonSet, errStale)
	} else if err != nil {
		return fmt.Errorf("get flannel's DaemonSet: %w", err)
	}
	want := r.flannelDaemonSet(nil).Spec.Template.Spec.Containers[0]
	cs := ds.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Image != want.Image || !slices.Equal(cs[0].Args, want.Args) || !hasEnv(cs[0].Env, r.flannelAPIEnv()) {
		return fmt.Errorf("flannel's DaemonSet runs another image, arguments or API server than %s %v: %w", want.Image, want.Args, errStale)
	}
	cm, err := kube.CoreV1().ConfigMaps(flannelNamespace).Get(ctx, flannelConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("flannel's ConfigMap %s/%s is missing: %w", flannelNamespace, flannelConfigMap, errStale)
	} else if err != nil {
		return fmt.Errorf("get flannel's ConfigMap: %w", err)
	}
	if netConf, err := r.flannelNetConf(); err != nil || cm.Data["net-conf.json"] != netConf {
		return fmt.Errorf("flannel's net-conf.json differs from the cluster's: %w", errStale)
	}
	return nil
}
