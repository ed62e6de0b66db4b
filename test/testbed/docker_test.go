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
}
