package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestFlannelCrossesSubnets: a cluster created with the default pod
// network (no network in the request: flannel, VXLAN) on hosts on two
// subnets with a router between them and no shared link (host-gw routes
// could not be added), from the default images and the file mirror.
// Pods on the two subnets reach each other by their own addresses, a pod
// across the router resolves a name through CoreDNS's Service, and a
// delete leaves neither flannel's device nor its rules.
//
// Health is honest about the data plane: CoreDNS scaled to 0 shows in
// the Running cluster's reason until it serves again. The worker on the
// second subnet runs containerd 2 with its default configuration (CNI
// plugins looked for in /opt/cni/bin only, which zke fills); rebooted, it
// comes back with pod networking and DNS.
//
// One worker is set up as a systemd-resolved host is (/etc/resolv.conf
// naming only the 127.0.0.53 stub, the real upstream in
// /run/systemd/resolve/resolv.conf): its kubelet reads the real file, and
// CoreDNS forwards to the upstream (a DNS server of the test's) without
// a loop.
func TestFlannelCrossesSubnets(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker, testbed.NeedContainerd2)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, SecondSubnet: []int{3}, Containerd2: []int{3}})
	ctx := context.Background()
	upstream := startFakeDNS(t, hosts[0].Gateway, "upstream.zke.test.", net.IPv4(192, 0, 2, 7))
	if out, err := hosts[1].Run(ctx, "printf 'nameserver 127.0.0.53\\noptions edns0 trust-ad\\nsearch lan\\n' > /etc/resolv.conf && "+
		"mkdir -p /run/systemd/resolve && printf '# resolved\\nnameserver "+hosts[0].Gateway+"\\nsearch lan\\n' > /run/systemd/resolve/resolv.conf"); err != nil {
		t.Fatalf("make host2 a systemd-resolved host: %v: %s", err, out)
	}
	inst := startInstance(t, "", "--health-interval", "1s")
	admin := inst.admin(t)
	// The bridge network (host-gw routes) cannot cross the router:
	// preflight refuses it before anything is installed, and says to use
	// flannel.
	admin.mustDo(http.MethodPost, apiPath+"/clusters", clusterBody("l2", hosts[0].Gateway+":8080", hosts), http.StatusCreated)
	admin.failedWith(t, "l2", "a bridge create across two subnets", "host3 ("+hosts[2].Address+") is outside host2's network", `use network.plugin "flannel"`)
	admin.deleteCluster(t, "l2", 3*time.Minute)
	body := clusterBody("overlay", hosts[0].Gateway+":8080", hosts)
	delete(body, "network")
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	frames, _ := admin.followZkelog(t, "overlay", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("create ended %+v", last)
	}
	t.Logf("create on two subnets took %s", time.Since(start).Round(time.Second))
	if _, c := admin.cluster("overlay"); !strings.Contains(fmt.Sprint(c["network"]), "flannel") {
		t.Errorf("network %v, want the default plugin flannel", c["network"])
	}
	// The two workers are on different subnets: the route between them
	// goes through the router, and the pod network through flannel.1.
	if out, err := hosts[1].Run(ctx, "ip route get "+hosts[2].Address); err != nil || !strings.Contains(out, " via ") {
		t.Fatalf("%s reaches %s directly (%v): %s; the test needs a router between them", hosts[1].Name, hosts[2].Name, err, out)
	}
	if out, err := hosts[1].Run(ctx, "ip -d link show flannel.1; cat /run/flannel/subnet.env; ip route"); err != nil || !strings.Contains(out, "vxlan id 1") || !strings.Contains(out, "dev flannel.1") {
		t.Errorf("%s has no flannel VXLAN device or routes through it (%v):\n%s", hosts[1].Name, err, out)
	}
	kube := kubeClient(t, admin.kubeconfig("overlay"))
	checkPodAddressKept(t, kube, "peer", hosts[2].Name, hosts[1].Name)
	// A pod on the second subnet resolves the API's Service through
	// CoreDNS's Service IP, wherever CoreDNS runs.
	pod := busyboxPod("dns-across", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
	pod.Spec.NodeName = hosts[2].Name
	if out := podOutput(t, kube, pod); !strings.Contains(out, "10.43.0.1") {
		t.Errorf("a pod on %s could not resolve the API's Service through CoreDNS:\n%s", hosts[2].Name, out)
	}
	if out, err := hosts[1].Exec(ctx, "cat", "/etc/kubernetes/kubelet-config.yaml"); err != nil || !strings.Contains(out, "resolvConf: /run/systemd/resolve/resolv.conf") {
		t.Errorf("host2's kubelet configuration: %v\n%s", err, out)
	}
	// A pod with the node's DNS gets the real file; one with the
	// cluster's resolves a name only the upstream knows, through CoreDNS.
	resolved := busyboxPod("resolved-check", corev1.RestartPolicyOnFailure, "sh", "-c", "cat /etc/resolv.conf; nslookup upstream.zke.test. "+clusterDNSIP)
	resolved.Spec.DNSPolicy = corev1.DNSDefault
	resolved.Spec.NodeName = hosts[1].Name
	if out := podOutput(t, kube, resolved); !strings.Contains(out, "nameserver "+hosts[0].Gateway) || strings.Contains(out, "127.0.0.53") || !strings.Contains(out, "192.0.2.7") {
		t.Errorf("pod on host2 saw:\n%s", out)
	}
	if upstream.Load() == 0 {
		t.Error("CoreDNS never asked the upstream named in /run/systemd/resolve/resolv.conf")
	}
	checkCoreDNSCalm(t, kube)
	// The kubelets see containerd's image file system: their eviction
	// manager gets its stats (before the Node is registered it cannot,
	// and it says once that containerd has no separate image file
	// system label: both are expected).
	for _, h := range hosts[1:] {
		if out, _ := h.Run(ctx, "docker logs kubelet 2>&1 | grep -E 'failed to get summary stats|HasDedicatedImageFs|failed to get imageFs' | grep -v 'node info' | tail -n 3"); strings.TrimSpace(out) != "" {
			t.Errorf("%s: the kubelet cannot read its image file system:\n%s", h.Name, out)
		}
	}
	ds, err := kube.AppsV1().DaemonSets("kube-flannel").Get(ctx, "kube-flannel-ds", metav1.GetOptions{})
	if err != nil || ds.Status.NumberReady != 2 {
		t.Errorf("flannel's DaemonSet: %v, %+v", err, ds.Status)
	}
	// Health is honest about the data plane: with CoreDNS scaled to 0
	// the cluster stays Running with a reason that says so, and the
	// reason goes once CoreDNS serves again.
	scaleCoreDNS := func(n int32) {
		t.Helper()
		// A merge patch carries no resourceVersion, so the deployment
		// controller's own status writes cannot make it conflict.
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		_, err := kube.AppsV1().Deployments("kube-system").Patch(ctx, "coredns", types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("scale CoreDNS to %d: %v", n, err)
		}
	}
	scaleCoreDNS(0)
	eventually(t, 2*time.Minute, "the cluster's reason names CoreDNS", func() (bool, string) {
		_, c := admin.cluster("overlay")
		return str(c["status"]) == "Running" && strings.Contains(str(c["reason"]), "CoreDNS is not serving"), str(c["status"]) + " " + str(c["reason"])
	})
	scaleCoreDNS(1)
	eventually(t, 3*time.Minute, "the cluster's reason cleared", func() (bool, string) {
		_, c := admin.cluster("overlay")
		return str(c["status"]) == "Running" && str(c["reason"]) == "", str(c["status"]) + " " + str(c["reason"])
	})
	// A worker rebooted (its processes killed, its links, routes, rules
	// and mounts gone, its daemons started again) comes back on its own:
	// Docker restarts the kubelet, which restarts flanneld, which puts
	// back the tunnel, the routes and the nat rules; its pods then reach
	// the other subnet's by their own addresses and resolve names.
	rebooted := time.Now()
	if err := hosts[2].Reboot(ctx); err != nil {
		t.Fatalf("reboot %s: %v", hosts[2].Name, err)
	}
	checkPodAddressKept(t, kube, "after-reboot", hosts[1].Name, hosts[2].Name)
	dns := busyboxPod("dns-after-reboot", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
	dns.Spec.NodeName = hosts[2].Name
	if out := podOutput(t, kube, dns); !strings.Contains(out, "10.43.0.1") {
		t.Errorf("after its reboot, a pod on %s could not resolve the API's Service through CoreDNS:\n%s", hosts[2].Name, out)
	}
	if out, err := hosts[2].Run(ctx, "ip -d link show flannel.1; iptables -t nat -S FLANNEL-POSTRTG"); err != nil || !strings.Contains(out, "vxlan id 1") || !strings.Contains(out, "MASQUERADE") {
		t.Errorf("after its reboot %s lacks flannel's tunnel or nat rules (%v):\n%s", hosts[2].Name, err, out)
	}
	t.Logf("%s rebooted: pod networking and DNS back in %s", hosts[2].Name, time.Since(rebooted).Round(time.Second))
	eventually(t, 2*time.Minute, "the cluster Running with no data-plane reason after the reboot", func() (bool, string) {
		_, c := admin.cluster("overlay")
		return str(c["status"]) == "Running" && str(c["reason"]) == "", str(c["status"]) + " " + str(c["reason"])
	})
	admin.deleteCluster(t, "overlay", 5*time.Minute)
	for _, h := range hosts {
		hostClean(t, h)
	}
}
