package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestDebianVMJoinsAsWorker: a real machine, prepared by nobody, joins a
// cluster. The worker is a Debian 12 virtual machine (QEMU) as Debian's
// packages install it: systemd, cgroup v2, Debian's containerd 1.6 (its
// package's config: CNI plugins looked for in /usr/lib/cni, which is
// empty) and Docker 20.10 with the systemd cgroup driver, no image and no
// Kubernetes file. Its control plane and another worker run on testbed
// hosts. The create sends no network (flannel, the default) and takes
// every image from the cluster's imageArchive (the bundle `singlecloud
// artifacts bundle` wrote) and the kubelet and the CNI plugins from the
// file mirror, as an air-gapped user's would. On the VM, zke's pods serve
// and reach the other worker's by their own addresses and resolve names
// through CoreDNS, and a delete leaves the machine as it was.
func TestDebianVMJoinsAsWorker(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker, testbed.NeedVM)
	hosts := testbed.StartHosts(t, 2, testbed.HostOptions{Docker: true})
	vm := testbed.StartVM(t, hosts)
	ctx := context.Background()
	if out, err := vm.Run(ctx, "stat -fc %T /sys/fs/cgroup; systemctl is-system-running; ls -A /usr/lib/cni /opt/cni/bin /etc/kubernetes 2>&1; docker images -q | wc -l"); err != nil ||
		!strings.Contains(out, "cgroup2fs") {
		t.Fatalf("%s is not the machine this test is about (%v):\n%s", vm.Name, err, out)
	} else {
		t.Logf("%s before the create:\n%s", vm.Name, out)
	}
	// The test's own pods run busybox: it goes into the kubelet's
	// containerd as a user's workload image would be pulled. Nothing zke
	// runs is loaded.
	busybox, err := testbed.ImageArchive(testbed.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(busybox)
	if err != nil {
		t.Fatal(err)
	}
	out, err := vm.RunInput(ctx, "ctr -n k8s.io images import -", f)
	f.Close()
	if err != nil {
		t.Fatalf("load the test's busybox into %s: %v: %s", vm.Name, err, out)
	}

	archive := bundleFromRegistry(t, model.PluginFlannel)
	inst := startInstance(t, "")
	admin := inst.admin(t)
	archiveName := filepath.Join("bundle", filepath.Base(archive))
	placeInImageDir(t, archive, filepath.Join(inst.dir, "images", archiveName))
	body := clusterBody("vm", hosts[0].Gateway+":8080", hosts)
	delete(body, "network")
	body["imageArchive"] = archiveName
	body["nodes"] = append(body["nodes"].([]map[string]any), map[string]any{
		"name": vm.Name, "address": vm.Address, "roles": []string{"worker"},
		"labels": map[string]string{"zke.test/worker": vm.Name},
		"taints": []map[string]string{{"key": "zke.test/dedicated", "value": "e2e", "effect": "NoSchedule"}},
	})
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	frames, _ := admin.followZkelog(t, "vm", 0, 25*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		if out, err := vm.Run(ctx, "docker ps -a; docker logs --tail 40 kubelet 2>&1; journalctl -u containerd --no-pager -n 20"); err == nil {
			t.Logf("%s:\n%s", vm.Name, out)
		}
		t.Fatalf("create with a Debian VM worker ended %+v", last)
	}
	t.Logf("create with a Debian VM worker took %s", time.Since(start).Round(time.Second))
	// zke put the CNI plugins where Debian's containerd looks for them,
	// and flanneld its VXLAN device.
	if out, err := vm.Run(ctx, "ls /usr/lib/cni /etc/cni/net.d; ip -d link show flannel.1"); err != nil ||
		!strings.Contains(out, "bridge") || !strings.Contains(out, "10-zke-bridge.conflist") || !strings.Contains(out, "vxlan id 1") {
		t.Errorf("%s: the CNI plugins, the pod network's config or flannel's device are not where they belong (%v):\n%s", vm.Name, err, out)
	}

	kube := kubeClient(t, admin.kubeconfig("vm"))
	node, err := kube.CoreV1().Nodes().Get(ctx, vm.Name, metav1.GetOptions{})
	if err != nil || !nodeReady(node) {
		t.Fatalf("node %s: %v %+v", vm.Name, err, node.Status.Conditions)
	}
	// Pods on the VM and on the testbed worker reach each other by their
	// own addresses, both ways, through flannel's VXLAN.
	checkPodAddressKept(t, kube, "to-vm", vm.Name, hosts[1].Name)
	checkPodAddressKept(t, kube, "from-vm", hosts[1].Name, vm.Name)
	dns := busyboxPod("dns-on-vm", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
	dns.Spec.NodeName = vm.Name
	if out := podOutput(t, kube, dns); !strings.Contains(out, "10.43.0.1") {
		t.Errorf("a pod on %s could not resolve the API's Service through CoreDNS:\n%s", vm.Name, out)
	}

	admin.mustDo(http.MethodDelete, apiPath+"/clusters/vm", nil, http.StatusAccepted)
	eventually(t, 10*time.Minute, "cluster vm deleted", func() (bool, string) {
		code, body := admin.cluster("vm")
		return code == http.StatusNotFound, str(body["status"]) + " " + str(body["reason"])
	})
	for _, h := range hosts {
		hostClean(t, h)
	}
	nodeClean(t, vm.Name, vm, "")
}

// nodeReady reports whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
