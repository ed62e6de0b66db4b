package testbed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

func TestDockerRunsKubernetesImage(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, Images: []string{testbed.KubernetesImage}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, err := h.Exec(ctx, "docker", "run", "--rm", "--network", "host", testbed.KubernetesImage, "etcd", "--version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "etcd Version: 3.5.") {
		t.Fatalf("etcd --version printed %q, want etcd Version: 3.5.x", out)
	}
	// The image's shell and the other components are there too.
	out, err = h.Exec(ctx, "docker", "run", "--rm", testbed.KubernetesImage, "sh", "-c", "kubelet --version && ls /usr/local/bin")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Kubernetes " + testbed.KubeVersion, "kube-apiserver", "etcdctl"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubernetes image: output %q lacks %q", out, want)
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
	args = append(args, "-v", "/var/lib/kubelet:/var/lib/kubelet:rshared", testbed.KubernetesImage,
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
