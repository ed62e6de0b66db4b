package zke

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// fakeCtr is a ctr stand-in: it logs its arguments and answers
// "containers ls -q labels."io.kubernetes.pod.uid"" with the pod
// containers, the way ctr 1.6 does for a label-presence filter.
const fakeCtr = `#!/bin/sh
echo "$*" >> "$CTR_LOG"
case "$*" in
*"containers ls -q labels.\"io.kubernetes.pod.uid\"") echo sandbox1; echo app1; echo sandbox2;;
esac
`

func TestPodContainersCleanup(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("the cleanup script needs sh: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "ctr"), []byte(fakeCtr), 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "ctr.log")
	run := func(t *testing.T, sock string) []string {
		t.Helper()
		_ = os.Remove(logFile)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", podContainersCleanup(sock))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CTR_LOG="+logFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("script: %v: %s", err, out)
		}
		raw, err := os.ReadFile(logFile)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(raw)), "\n")
	}

	t.Run("pod containers", func(t *testing.T) {
		// A unix socket path is limited to 108 bytes: keep it short.
		sock := filepath.Join(dir, "c.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		a := "-a " + sock + " -n k8s.io "
		want := []string{a + `containers ls -q labels."io.kubernetes.pod.uid"`}
		for _, c := range []string{"sandbox1", "app1", "sandbox2"} {
			want = append(want, a+"tasks kill -s KILL "+c, a+"tasks delete -f "+c, a+"containers delete "+c)
		}
		if got := run(t, sock); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("ctr calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("no containerd socket", func(t *testing.T) {
		if got := run(t, filepath.Join(dir, "missing.sock")); len(got) != 0 {
			t.Errorf("ctr called without a containerd socket: %q", got)
		}
	})
}

func TestCleanScript(t *testing.T) {
	tests := []struct {
		name   string
		node   model.Node
		want   []string
		banned []string
	}{
		{
			name: "default prefix",
			node: model.Node{Name: "w1", Address: "10.0.0.1"},
			want: []string{"k='/var/lib/kubelet'", "a='/run/containerd/containerd.sock'",
				"rm -rf '/etc/kubernetes/ssl' '/etc/kubernetes/kubelet-config.yaml' '/var/lib/etcd' '/var/lib/kubelet' '/var/log/pods' '/var/log/containers'",
				"timeout", `'labels."io.kubernetes.pod.uid"'`},
			// Never every task or container of the namespace.
			banned: []string{"tasks ls", "containers ls -q 2", "containers ls -q)"},
		},
		{
			name: "prefix and socket",
			node: model.Node{Name: "w1", Address: "10.0.0.1", PrefixPath: "/opt/zke", ContainerdSocket: "/run/k3s/containerd.sock"},
			want: []string{"k='/opt/zke/var/lib/kubelet'", "a='/run/k3s/containerd.sock'", "'/opt/zke/etc/kubernetes/ssl'"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nodesOf(model.ClusterConfig{Nodes: []model.Node{tt.node}})[0]
			s := cleanScript(n)
			for _, w := range tt.want {
				if !strings.Contains(s, w) {
					t.Errorf("script lacks %q:\n%s", w, s)
				}
			}
			for _, b := range tt.banned {
				if strings.Contains(s, b) {
					t.Errorf("script has %q:\n%s", b, s)
				}
			}
			if err := exec.Command("sh", "-n", "-c", s).Run(); err != nil {
				t.Errorf("sh -n: %v", err)
			}
			m := manualCleanup("prod", n)
			for _, w := range []string{"label=io.zke.cluster=prod", "label=io.zke.managed=true", n.dir(dirSSL), cniConfFile} {
				if !strings.Contains(m, w) {
					t.Errorf("manual cleanup lacks %q: %s", w, m)
				}
			}
		})
	}
}
