package testbed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// cniConfig is a plain bridge network for the pods of one node.
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "testbed",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
`

// kubeletConfig is what a kubelet 1.36 needs on this machine: cgroup v1
// allowed, the cgroupfs driver, a cgroup root of its own, the host's
// containerd, and client certificates from the cluster CA for the API
// server's log and exec requests.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: %[2]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
authorization: {mode: AlwaysAllow}
failSwapOn: false
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
`

func TestKubeletJoinsControlPlaneInAnotherHost(t *testing.T) {
	hosts := testbed.StartHosts(t, 2, testbed.HostOptions{Containerd: true, Images: []string{testbed.BusyboxImage}})
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{Host: hosts[0]})
	node := hosts[1]
	if !strings.Contains(cp.URL, hosts[0].Address) {
		t.Fatalf("control plane URL %s is not on %s", cp.URL, hosts[0].Address)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	nodeKubeconfig, err := cp.ClientCertKubeconfig("system:node:"+node.Name, "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"/etc/cni/net.d/10-testbed.conflist": cniConfig,
		"/etc/kubernetes/pki/ca.crt":         string(cp.CA),
		"/etc/kubernetes/kubelet.kubeconfig": string(nodeKubeconfig),
		"/etc/kubernetes/kubelet.yaml":       fmt.Sprintf(kubeletConfig, node.CgroupRoot, node.Address),
	}
	for path, data := range files {
		if err := node.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The host's plugin directories start empty; this test, which runs a
	// kubelet without zke, installs the plugins where containerd looks
	// (upstream's /opt/cni/bin, Debian's /usr/lib/cni), as zke would.
	plugins, err := testbed.CNIPluginDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"bridge", "host-local", "loopback", "portmap"} {
		data, err := os.ReadFile(filepath.Join(plugins, p))
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"/opt/cni/bin", "/usr/lib/cni"} {
			if err := node.WriteFile(filepath.Join(dir, p), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	bin, err := testbed.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := node.Start(filepath.Join(bin, "bin", "kubelet"),
		"--config=/etc/kubernetes/kubelet.yaml", "--kubeconfig=/etc/kubernetes/kubelet.kubeconfig",
		"--hostname-override="+node.Name, "--node-ip="+node.Address, "--v=1")
	if err != nil {
		t.Fatal(err)
	}

	admin := clientFor(t, cp.Kubeconfig)
	waitFor(t, ctx, "node "+node.Name+" Ready", func() error {
		select {
		case <-kubelet.Done():
			return fmt.Errorf("kubelet exited; see %s", kubelet.LogPath())
		default:
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready: %v", node.Name, n.Status.Conditions)
	})

	// Pods need the namespace's default service account, made by the
	// controller manager.
	waitFor(t, ctx, "default service account", func() error {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	zero := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node.Name,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name:            "hello",
				Image:           testbed.BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c",
					"echo hello from pod; cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; exec sleep 3600"},
			}},
		},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	waitFor(t, ctx, "pod Running", func() error {
		p, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod phase %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		if !strings.HasPrefix(p.Status.PodIP, "10.88.0.") {
			return fmt.Errorf("pod IP %q not from the CNI bridge", p.Status.PodIP)
		}
		return nil
	})
	// Logs come from the kubelet through the API server (which dials the
	// kubelet on the node's address); the service account volume is filled.
	waitFor(t, ctx, "pod logs", func() error {
		logs, err := admin.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(logs), "hello from pod\ndefault\n") {
			return fmt.Errorf("logs %q lack the greeting and the service account namespace", logs)
		}
		return nil
	})

	if err := admin.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	waitFor(t, ctx, "pod gone", func() error {
		_, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod still there (%v)", err)
	})
}
