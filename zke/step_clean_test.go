package zke

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// fakeCtr is a ctr stand-in: it logs its arguments and answers
// "containers ls -q <filter>" from the table of containers by pod UID that
// the filter names, the way ctr 1.6 does for
// labels."io.kubernetes.pod.uid"=="<uid>".
const fakeCtr = `#!/bin/sh
echo "$*" >> "$CTR_LOG"
case "$*" in
*"containers ls -q labels.\"io.kubernetes.pod.uid\"==\"0f3e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f\"") echo sandbox1; echo app1;;
*"containers ls -q labels.\"io.kubernetes.pod.uid\"==\"aaaa-1111\"") echo sandbox2;;
*"containers ls -q labels.\"io.kubernetes.pod.uid\"==\"cccc-3333\"") echo ended3;;
esac
`

func TestPodContainersCleanup(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatalf("the cleanup script needs sh: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	kubelet := filepath.Join(dir, "prefix", "var", "lib", "kubelet")
	logs := filepath.Join(dir, "prefix", "var", "log", "pods")
	for _, d := range []string{bin,
		filepath.Join(kubelet, "pods", "0f3e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f"),
		filepath.Join(kubelet, "pods", "aaaa-1111"),
		filepath.Join(kubelet, "pods", "bbbb-2222"), // a pod whose containers are gone already
		filepath.Join(kubelet, "pods", `x" ; touch pwned ; "`),
		filepath.Join(kubelet, "pods", "*"),
		filepath.Join(kubelet, "pods", "not-a-uid"),
		// The log directory of a running pod, and of a deleted pod
		// whose ended container is still in containerd.
		filepath.Join(logs, "default_app_aaaa-1111"),
		filepath.Join(logs, "default_ended_cccc-3333"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file that a glob of the names above would find.
	if err := os.WriteFile(filepath.Join(dir, "dddd"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "ctr"), []byte(fakeCtr), 0o755); err != nil {
		t.Fatal(err)
	}
	// A unix socket path is limited to 108 bytes: keep it short.
	sock := filepath.Join(dir, "c.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	logFile := filepath.Join(dir, "ctr.log")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := "k=" + shellQuote(kubelet) + "\nl=" + shellQuote(logs) + "\n" + podContainersCleanup(sock)
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "CTR_LOG="+logFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("script: %v: %s", err, out)
	}
	raw, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	a := "-a " + sock + " -n k8s.io "
	containers := map[string][]string{"0f3e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f": {"sandbox1", "app1"}, "aaaa-1111": {"sandbox2"}, "cccc-3333": {"ended3"}}
	var want []string
	for _, uid := range []string{"0f3e2d1c-9b8a-4c7d-8e6f-5a4b3c2d1e0f", "aaaa-1111", "bbbb-2222", "cccc-3333"} {
		want = append(want, a+`containers ls -q labels."io.kubernetes.pod.uid"=="`+uid+`"`)
		for _, c := range containers[uid] {
			want = append(want, a+"tasks kill -s KILL "+c, a+"tasks delete -f "+c, a+"containers delete "+c)
		}
	}
	got := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ctr calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a pod directory name was executed")
	}
}

func TestCleanScript(t *testing.T) {
	all := func(n node) []string { return ownedIn(State{}, n) }
	tests := []struct {
		name string
		node model.Node
		// owned gives the node's record.
		owned  func(n node) []string
		want   []string
		banned []string
	}{
		{
			name:  "default prefix, everything zke's",
			node:  model.Node{Name: "w1", Address: "10.0.0.1", Roles: []model.Role{model.RoleEtcd, model.RoleWorker}},
			owned: func(n node) []string { return allPaths(n) },
			want: []string{"k='/var/lib/kubelet'", "a='/run/containerd/containerd.sock'",
				"rm -rf -- '/etc/cni/net.d/10-zke-bridge.conflist' '/etc/kubernetes/kube-lb' '/etc/kubernetes/kubelet-config.yaml' '/etc/kubernetes/ssl' '/var/lib/etcd' '/var/lib/etcd-restore' '/var/lib/kubelet' '/var/log/containers' '/var/log/pods'",
				"timeout", `labels.\"io.kubernetes.pod.uid\"==`, "l='/var/log/pods'", "umount -l"},
			// Never every task or container of the namespace.
			banned: []string{"tasks ls", "containers ls -q 2", "containers ls -q)", "echo 'left"},
		},
		{
			name:  "prefix and socket",
			node:  model.Node{Name: "w1", Address: "10.0.0.1", PrefixPath: "/opt/zke", ContainerdSocket: "/run/k3s/containerd.sock", Roles: []model.Role{model.RoleWorker}},
			owned: func(n node) []string { return []string{n.dir(dirSSL), n.dir(dirKubelet)} },
			want: []string{"k='/opt/zke/var/lib/kubelet'", "l=''", "a='/run/k3s/containerd.sock'", "rm -rf -- '/opt/zke/etc/kubernetes/ssl' '/opt/zke/var/lib/kubelet'\n",
				`zke_path_state '/opt/zke/var/lib/etcd')" in absent|empty) ;; *) echo 'left `},
		},
		{
			name:   "a foreign kubelet: its pods and mounts untouched",
			node:   model.Node{Name: "w1", Address: "10.0.0.1", Roles: []model.Role{model.RoleWorker}},
			owned:  func(n node) []string { return []string{n.dir(dirSSL)} },
			want:   []string{"rm -rf -- '/etc/kubernetes/ssl'\n", `zke_path_state '/var/lib/kubelet')`, "ip route flush proto 77"},
			banned: []string{"k=", "ctr", "umount", "'/var/lib/kubelet' ", "rm -rf -- '/var"},
		},
		{
			name:   "nothing proven: nothing deleted",
			node:   model.Node{Name: "w1", Address: "10.0.0.1", Roles: []model.Role{model.RoleWorker}},
			owned:  all,
			want:   []string{"ip link del zke0", `zke_path_state '/etc/cni/net.d/10-zke-bridge.conflist')`},
			banned: []string{"rm ", "ctr", "umount"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := nodesOf(model.ClusterConfig{Nodes: []model.Node{tt.node}})[0]
			owned := tt.owned(n)
			slices.Sort(owned)
			s := cleanScript(n, owned, podNetCleanup{})
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
			m := manualCleanup("prod", n, owned, podNetCleanup{})
			if f := manualCleanup("prod", n, owned, podNetCleanup{Flannel: true, ClusterCIDR: "10.42.0.0/16", Gateways: []string{"10.0.0.2"}}); !strings.Contains(f, "; ip link del flannel.1; ip link del flannel-v6.1; rm -f /run/flannel/subnet.env; ip -4 route show root '10.42.0.0/16'") {
				t.Errorf("a flannel cluster's manual cleanup does not remove flannel's device and lease: %s", f)
			}
			for _, w := range []string{"'label=io.zke.cluster=prod'", "'label=io.zke.managed=true'", "ip link del zke0"} {
				if !strings.Contains(m, w) {
					t.Errorf("manual cleanup lacks %q: %s", w, m)
				}
			}
			for _, p := range allPaths(n) {
				if named := strings.Contains(m, shellQuote(p)+" ") || strings.HasSuffix(strings.Split(m, "; ip link")[0], shellQuote(p)); named != slices.Contains(owned, p) {
					t.Errorf("manual cleanup names %s: %v, want %v: %s", p, named, !named, m)
				}
			}
		})
	}
}

// TestUnmountUnder runs the unmount part of cleanScript against a mounts
// table and a umount that logs: only mount points strictly under the
// kubelet directory go, deepest first, the directory compared as text
// (its '.', '+' and '@' are not pattern characters).
func TestUnmountUnder(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "umount.log")
	if err := os.WriteFile(filepath.Join(bin, "umount"), []byte("#!/bin/sh\necho \"$*\" >> \"$UMOUNT_LOG\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, kubelet string
		mounts        []string
		want          []string
	}{
		{
			name:    "plain",
			kubelet: "/var/lib/kubelet",
			mounts: []string{"/var/lib/kubelet/pods/u1/volumes/a", "/var/lib/kubelet", "/var/lib/kubelet2/x", "/var/lib/kubelet/pods/u1",
				"/", "/proc", "/x/var/lib/kubelet/y"},
			want: []string{"-l /var/lib/kubelet/pods/u1/volumes/a", "-l /var/lib/kubelet/pods/u1"},
		},
		{
			name:    "regex characters in the prefix are literal",
			kubelet: "/opt/z.k+e@1/var/lib/kubelet",
			mounts:  []string{"/opt/zXkkke@1/var/lib/kubelet/pods/a", "/opt/z.k+e@1/var/lib/kubelet/pods/b", "/opt/zzk+e@1/var/lib/kubelet/c"},
			want:    []string{"-l /opt/z.k+e@1/var/lib/kubelet/pods/b"},
		},
		{
			name:    "a crafted mount point is one argument",
			kubelet: "/var/lib/kubelet",
			mounts:  []string{`/var/lib/kubelet/pods/*`, `/var/lib/kubelet/pods/$(touch_pwned)`},
			want:    []string{"-l /var/lib/kubelet/pods/*", "-l /var/lib/kubelet/pods/$(touch_pwned)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(logFile)
			var table strings.Builder
			for _, m := range tt.mounts {
				table.WriteString("tmpfs " + m + " tmpfs rw,relatime 0 0\n")
			}
			mounts := filepath.Join(dir, "mounts")
			if err := os.WriteFile(mounts, []byte(table.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "sh", "-c", "k="+shellQuote(tt.kubelet)+"\n"+unmountUnder("k", mounts))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "UMOUNT_LOG="+logFile, "LC_ALL=C")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("script: %v: %s", err, out)
			}
			raw, err := os.ReadFile(logFile)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			var got []string
			if s := strings.TrimSpace(string(raw)); s != "" {
				got = strings.Split(s, "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("umount calls %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCleanScriptDeletesOnlyWhatIsProven runs cleanScript with /bin/sh
// on a node tree (ip, ctr and umount faked): the recorded paths go; a
// foreign etcd directory, a foreign file beside zke's directories and a
// directory zke only shares the name prefix with stay, the first reported
// as left.
func TestCleanScriptDeletesOnlyWhatIsProven(t *testing.T) {
	root := t.TempDir()
	prefix := filepath.Join(root, "node")
	bin := filepath.Join(root, "bin")
	n := nodesOf(model.ClusterConfig{Nodes: []model.Node{{Name: "w1", Address: "10.0.0.1", PrefixPath: prefix,
		ContainerdSocket: filepath.Join(root, "no.sock"), Roles: []model.Role{model.RoleEtcd, model.RoleWorker}}}})[0]
	files := map[string]string{
		"etc/kubernetes/ssl/kube-ca.pem":            "zke",
		"etc/kubernetes/kubelet-config.yaml":        "zke",
		"var/lib/kubelet/pods/aaaa-1111/x":          "zke",
		"var/log/pods/default_app_aaaa-1111/0.log":  "zke",
		"var/lib/etcd/member/snap/db":               "foreign",
		"etc/kubernetes/admin.conf":                 "foreign",
		"var/lib/kubelet-other/config.yaml":         "foreign",
		"var/log/containers-archive/old.log":        "foreign",
		"etc/kubernetes/ssl-backup/kube-ca.pem.old": "foreign",
	}
	for rel, content := range files {
		p := filepath.Join(prefix, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"ip", "ctr", "umount", "iptables", "ip6tables"} {
		if err := os.WriteFile(filepath.Join(bin, tool), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	owned := []string{n.dir(dirSSL), kubeletConfigFile(n), n.dir(dirKubelet), n.dir(dirPodLogs)}
	slices.Sort(owned)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", cleanScript(n, owned, podNetCleanup{}))
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("script: %v: %s", err, out)
	}
	for rel, content := range files {
		_, err := os.Stat(filepath.Join(prefix, rel))
		if gone := os.IsNotExist(err); gone != (content == "zke") {
			t.Errorf("%s (%s): gone %v", rel, content, gone)
		}
	}
	left := leftPaths(string(out), unproven(n, owned))
	if !slices.Contains(left, n.dir(dirEtcdData)) {
		t.Errorf("left %q: lacks the foreign etcd directory", left)
	}
	for _, p := range append(owned, n.dir(dirContainers)) {
		if slices.Contains(left, p) {
			t.Errorf("left %q names %s", left, p)
		}
	}
}
