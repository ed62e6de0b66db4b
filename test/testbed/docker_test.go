package testbed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestDockerRunsKubernetesImage runs each component's image as zke does:
// the program named as the entrypoint, found in the image's PATH.
func TestDockerRunsKubernetesImage(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, Images: []string{testbed.KubeletImage,
		testbed.EtcdImage, testbed.KubeAPIServerImage, testbed.KubeProxyImage}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(image, entrypoint string, args ...string) (string, error) {
		return h.Exec(ctx, "docker", append([]string{"run", "--rm", "--network", "host", "--entrypoint", entrypoint, image}, args...)...)
	}

	// The etcd image holds the version its tag (kubeadm's, 3.7.0-0)
	// names, and etcdutl beside etcdctl, as upstream's does: zke's restore
	// runs etcdutl.
	etcdVersion := strings.TrimSuffix(testbed.EtcdImage[strings.LastIndex(testbed.EtcdImage, ":")+1:], "-0")
	for _, c := range []struct{ image, entrypoint, arg, want string }{
		{testbed.EtcdImage, "etcd", "--version", "etcd Version: " + etcdVersion + "\n"},
		{testbed.EtcdImage, "etcdctl", "version", "etcdctl version: " + etcdVersion + "\n"},
		{testbed.EtcdImage, "etcdutl", "version", "etcdutl version: " + etcdVersion + "\n"},
		{testbed.KubeAPIServerImage, "kube-apiserver", "--version", "Kubernetes " + testbed.KubeVersion},
		{testbed.KubeProxyImage, "kube-proxy", "--version", "Kubernetes " + testbed.KubeVersion},
		{testbed.KubeProxyImage, "iptables", "--version", "iptables v"},
	} {
		if out, err := run(c.image, c.entrypoint, c.arg); err != nil || !strings.Contains(out, c.want) {
			t.Errorf("%s in %s: %q, %v; want %q", c.entrypoint, c.image, out, err, c.want)
		}
	}
	// The component images are distroless: no shell.
	if out, err := run(testbed.KubeAPIServerImage, "sh", "-c", "true"); err == nil {
		t.Errorf("the kube-apiserver image runs a shell: %q", out)
	}
	// The kubelet's image is a Debian root the kubelet's release binary
	// runs in (zke mounts it there), with the mount(8) the kubelet runs.
	testbin, err := testbed.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Exec(ctx, "docker", "run", "--rm", "-v", testbin+"/bin/kubelet:/usr/local/bin/kubelet:ro", testbed.KubeletImage,
		"sh", "-c", "kubelet --version && command -v mount umount nsenter && . /etc/os-release && echo $VERSION_CODENAME")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Kubernetes " + testbed.KubeVersion, "/usr/bin/mount", "bookworm"} {
		if !strings.Contains(out, want) {
			t.Errorf("the kubelet's image: output %q, want %q", out, want)
		}
	}
	// The host's daemon is the one on the default socket inside the host,
	// and the socket is reachable from the test's namespace too.
	if out, err := h.Exec(ctx, "docker", "--host", "unix:///var/run/docker.sock", "info", "--format", "{{.DockerRootDir}}"); err != nil || !strings.HasPrefix(strings.TrimSpace(out), h.Dir) {
		t.Errorf("docker info inside %s: %q, %v; want a root under %s", h.Name, out, err, h.Dir)
	}

	// An almost privileged container (what a containerised kubelet needs)
	// mounts under an rshared bind of /var/lib/kubelet, and the mount
	// propagates to the host: the host's mounts are shared.
	args := append([]string{"run", "--rm"}, testbed.PrivilegedDockerFlags()...)
	args = append(args, "-v", "/var/lib/kubelet:/var/lib/kubelet:rshared", testbed.KubeletImage,
		"sh", "-c", "mkdir -p /var/lib/kubelet/vol && mount -t tmpfs vol /var/lib/kubelet/vol && touch /var/lib/kubelet/vol/made-in-container && "+
			"until [ -e /var/lib/kubelet/vol/seen ]; do sleep 1; done")
	done := make(chan error, 1)
	go func() {
		_, err := h.Exec(ctx, "docker", args...)
		done <- err
	}()
	waitFor(t, ctx, "propagated mount", func() error {
		select {
		case err := <-done:
			t.Fatalf("almost privileged container ended before its mount was seen: %v", err)
		default:
		}
		_, err := h.Exec(ctx, "test", "-e", "/var/lib/kubelet/vol/made-in-container")
		return err
	})
	if _, err := h.Exec(ctx, "touch", "/var/lib/kubelet/vol/seen"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("almost privileged container: %v", err)
	}
}
