//go:build vmcluster

package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestVMClusterCreatesAndUpgrades (make test-vm; opt-in: it takes tens of
// minutes under QEMU's emulation): a whole cluster on three Debian 12
// virtual machines as Debian's packages install them and nothing else —
// each runs etcd, the first the control plane, the others a kubelet — with
// the defaults (flannel, no images) from an `artifacts bundle` archive of
// the previous release, then upgraded to the current release from its
// bundle. Pods on different machines reach each other by their own
// addresses and resolve names through CoreDNS before and after, every
// node reports the new release, and a delete leaves the machines clean.
// The one testbed host only anchors the bridge; it is not in the cluster.
func TestVMClusterCreatesAndUpgrades(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedVM)
	anchor := testbed.StartHosts(t, 1, testbed.HostOptions{})
	vms := testbed.StartVMs(t, anchor, 3)
	ctx := context.Background()
	busybox, err := testbed.ImageArchive(testbed.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		loadTestImage(t, vm, busybox)
	}
	from, to := testbed.PreviousKubeVersion, testbed.KubeVersion
	inst := startInstance(t, "")
	admin := inst.admin(t)
	archives := map[string]string{}
	for _, v := range []string{from, to} {
		a := bundleFromRegistryAt(t, v)
		archives[v] = filepath.Join("bundle", filepath.Base(a))
		placeInImageDir(t, a, filepath.Join(inst.dir, "images", archives[v]))
	}
	body := func(version string) map[string]any {
		var nodes []map[string]any
		for i, vm := range vms {
			roles := []string{"etcd", "worker"}
			if i == 0 {
				roles = []string{"etcd", "controlplane"} // a control-plane node runs no pods
			}
			nodes = append(nodes, map[string]any{"name": vm.Name, "address": vm.Address, "roles": roles})
		}
		return map[string]any{
			"name": "vms", "nodes": nodes, "sshUser": "root", "sshKey": string(anchor[0].ClientKeyPEM),
			"singleCloudAddress": anchor[0].Gateway + ":8080", "kubernetesVersion": version, "imageArchive": archives[version],
		}
	}
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body(from), http.StatusCreated)
	endsRunning(t, admin, "vms", 60*time.Minute, vms...)
	t.Logf("create on three Debian VMs at %s took %s", from, time.Since(start).Round(time.Second))
	kube := kubeClient(t, admin.kubeconfig("vms"))
	checkNodeVersions(t, kube, from)
	checkPodAddressKept(t, kube, "before", vms[1].Name, vms[2].Name)

	start = time.Now()
	admin.mustDo(http.MethodPut, apiPath+"/clusters/vms", body(to), http.StatusOK)
	endsRunning(t, admin, "vms", 60*time.Minute, vms...)
	t.Logf("upgrade of three Debian VMs to %s took %s", to, time.Since(start).Round(time.Second))
	checkNodeVersions(t, kube, to)
	checkPodAddressKept(t, kube, "after", vms[2].Name, vms[1].Name)
	dns := busyboxPod("dns-after", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
	dns.Spec.NodeName = vms[1].Name
	if out := podOutput(t, kube, dns); !strings.Contains(out, "10.43.0.1") {
		t.Errorf("after the upgrade a pod on %s could not resolve the API's Service:\n%s", vms[1].Name, out)
	}
	if t.Failed() {
		vmDNSDiagnostics(t, admin, kube, vms[1])
	}

	admin.deleteCluster(t, "vms", 20*time.Minute)
	for _, vm := range vms {
		nodeClean(t, vm.Name, vm, "")
		if out, err := vm.Run(ctx, "find /etc/kubernetes /var/lib/etcd -mindepth 1 2>/dev/null; true"); err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("%s: left %q (%v)", vm.Name, out, err)
		}
	}
}

// vmDNSDiagnostics logs what a failed DNS check needs read: the cluster's
// reason, CoreDNS's pods and the endpoints of its Service, and the
// worker's kube-proxy log and nat rules for the Service.
func vmDNSDiagnostics(t *testing.T, admin *client, kube kubernetes.Interface, vm *testbed.VM) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, body := admin.cluster("vms")
	t.Logf("cluster vms: %v: %v", body["status"], body["reason"])
	if pods, err := kube.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"}); err == nil {
		for _, p := range pods.Items {
			t.Logf("CoreDNS pod %s on %s: %s, ready %v", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(p))
		}
	}
	if slices, err := kube.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"}); err == nil {
		for _, sl := range slices.Items {
			for _, e := range sl.Endpoints {
				t.Logf("kube-dns endpoint %v ready %v on %v", e.Addresses, e.Conditions.Ready != nil && *e.Conditions.Ready, e.NodeName)
			}
		}
	}
	out, err := vm.Run(ctx, "docker logs --tail 40 kube-proxy 2>&1; iptables-save -t nat 2>/dev/null | grep -i dns | head -20; iptables-save -t filter 2>/dev/null | grep -i 'kube-dns\\|REJECT' | head -20")
	t.Logf("%s: kube-proxy and its rules (%v):\n%s", vm.Name, err, out)
}

// podReady reports whether p's Ready condition is true.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
