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

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestDebianVMJoinsAsWorker: real machines, prepared by nobody, join a
// cluster. The workers are Debian 12 virtual machines (QEMU) as Debian's
// packages install them: systemd, cgroup v2, Debian's containerd 1.6 (its
// package's config: CNI plugins looked for in /usr/lib/cni, which is
// empty) and Docker 20.10 with the systemd cgroup driver, no image and no
// Kubernetes file. The second VM's containerd drives cgroups through
// systemd (SystemdCgroup = true, as Kubernetes' documentation tells a
// user to set on a systemd host); the first keeps its package's cgroupfs.
// The control plane and another worker run on testbed hosts. The create
// sends no network (flannel, the default) and takes every image from the
// cluster's imageArchive (the bundle `singlecloud artifacts bundle`
// wrote) and the kubelet and the CNI plugins from the file mirror, as an
// air-gapped user's would. Each kubelet runs with its runtime's cgroup
// driver; pods on the VMs serve and reach the other workers' by their own
// addresses and resolve names through CoreDNS; and a delete leaves the
// machines as they were.
func TestDebianVMJoinsAsWorker(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker, testbed.NeedVM)
	hosts := testbed.StartHosts(t, 2, testbed.HostOptions{Docker: true})
	vms := testbed.StartVMs(t, hosts, 2)
	ctx := context.Background()
	// The test's own pods run busybox: it goes into the kubelet's
	// containerd as a user's workload image would be pulled. Nothing zke
	// runs is loaded.
	busybox, err := testbed.ImageArchive(testbed.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		if out, err := vm.Run(ctx, "stat -fc %T /sys/fs/cgroup; ls -A /usr/lib/cni /opt/cni/bin /etc/kubernetes 2>&1; docker images -q | wc -l"); err != nil ||
			!strings.Contains(out, "cgroup2fs") {
			t.Fatalf("%s is not the machine this test is about (%v):\n%s", vm.Name, err, out)
		} else {
			t.Logf("%s before the create:\n%s", vm.Name, out)
		}
		loadTestImage(t, vm, busybox)
	}
	systemdCgroups := `cat >> /etc/containerd/config.toml <<'EOF'
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
EOF
systemctl restart containerd`
	if out, err := vms[1].Run(ctx, systemdCgroups); err != nil {
		t.Fatalf("%s: set containerd's systemd cgroup driver: %v: %s", vms[1].Name, err, out)
	}

	archive := bundleFromRegistry(t)
	inst := startInstance(t, "")
	admin := inst.admin(t)
	archiveName := filepath.Join("bundle", filepath.Base(archive))
	placeInImageDir(t, archive, filepath.Join(inst.dir, "images", archiveName))
	body := clusterBody("vm", hosts[0].Gateway+":8080", hosts)
	delete(body, "network")
	body["imageArchive"] = archiveName
	for _, vm := range vms {
		body["nodes"] = append(body["nodes"].([]map[string]any), map[string]any{
			"name": vm.Name, "address": vm.Address, "roles": []string{"worker"},
			"labels": map[string]string{"zke.test/worker": vm.Name},
			"taints": []map[string]string{{"key": "zke.test/dedicated", "value": "e2e", "effect": "NoSchedule"}},
		})
	}
	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	endsRunning(t, admin, "vm", 25*time.Minute, vms...)
	t.Logf("create with two Debian VM workers took %s", time.Since(start).Round(time.Second))
	for i, vm := range vms {
		// zke put the CNI plugins where Debian's containerd looks for
		// them, flanneld its VXLAN device, and the kubelet runs with the
		// runtime's cgroup driver, its pods' cgroups where that driver
		// puts them.
		driver, pods := "cgroupfs", "/sys/fs/cgroup/kubepods/"
		if i == 1 {
			driver, pods = "systemd", "/sys/fs/cgroup/kubepods.slice/"
		}
		out, err := vm.Run(ctx, "ls /usr/lib/cni /etc/cni/net.d; ip -d link show flannel.1; grep cgroupDriver /etc/kubernetes/kubelet-config.yaml; ls -d "+pods)
		if err != nil || !strings.Contains(out, "bridge") || !strings.Contains(out, "10-zke-bridge.conflist") || !strings.Contains(out, "vxlan id 1") ||
			!strings.Contains(out, "cgroupDriver: "+driver) {
			t.Errorf("%s: the CNI plugins, the pod network's config, flannel's device or the %s cgroup driver are not where they belong (%v):\n%s", vm.Name, driver, err, out)
		}
	}

	kube := kubeClient(t, admin.kubeconfig("vm"))
	for _, vm := range vms {
		node, err := kube.CoreV1().Nodes().Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil || !nodeReady(node) {
			t.Fatalf("node %s: %v %+v", vm.Name, err, node.Status.Conditions)
		}
	}
	// Pods on the VMs and on the testbed worker reach each other by their
	// own addresses, through flannel's VXLAN.
	checkPodAddressKept(t, kube, "to-vm", vms[0].Name, hosts[1].Name)
	checkPodAddressKept(t, kube, "from-vm", hosts[1].Name, vms[1].Name)
	dns := busyboxPod("dns-on-vm", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local", clusterDNSIP)
	dns.Spec.NodeName = vms[1].Name
	if out := podOutput(t, kube, dns); !strings.Contains(out, "10.43.0.1") {
		t.Errorf("a pod on %s could not resolve the API's Service through CoreDNS:\n%s", vms[1].Name, out)
	}

	admin.deleteCluster(t, "vm", 10*time.Minute)
	for _, h := range hosts {
		hostClean(t, h)
	}
	for _, vm := range vms {
		nodeClean(t, vm.Name, vm, "")
	}
}

// loadTestImage imports the docker archive of a test's own workload
// image into vm's containerd, in the kubelet's namespace, as a user's
// workload image would be pulled there. Nothing zke runs is loaded so.
func loadTestImage(t *testing.T, vm *testbed.VM, archive string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := vm.RunInput(ctx, "ctr -n k8s.io images import -", f); err != nil {
		t.Fatalf("load %s into %s: %v: %s", archive, vm.Name, err, out)
	}
}

// endsRunning follows cluster's running operation to its result and
// fails the test unless it is Running, showing the log and the kubelet's
// and containerd's last words on each of vms.
func endsRunning(t *testing.T, admin *client, cluster string, d time.Duration, vms ...*testbed.VM) {
	t.Helper()
	frames, _ := admin.followZkelog(t, cluster, 0, d, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		for _, vm := range vms {
			if out, err := vm.Run(context.Background(), "docker ps -a; docker logs --tail 40 kubelet 2>&1; journalctl -u containerd --no-pager -n 20"); err == nil {
				t.Logf("%s:\n%s", vm.Name, out)
			}
		}
		t.Fatalf("cluster %s ended %+v", cluster, last)
	}
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
