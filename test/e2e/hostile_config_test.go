package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// placeInImageDir puts the file src at dst (inside a server's image
// directory), hard-linked when both are on one file system, else copied.
func placeInImageDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(src, dst); err == nil {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every value of a cluster config that reaches a node's shell or files, or
// the server's files, is refused through the binary's API when it is
// hostile: 422 InvalidOption naming the field, and no cluster created. A
// huge cluster is refused at "nodes", and a config with thousands of
// problems gets a bounded answer.
func TestHostileClusterConfigRefused(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	key := otherKeyPEM(t)
	base := func() map[string]any {
		return map[string]any{
			"name": "hostile", "sshUser": "root", "sshKey": key, "singleCloudAddress": "10.0.0.9:8080",
			"network": map[string]string{"plugin": "bridge"},
			"nodes": []map[string]any{
				{"name": "n1", "address": "10.0.0.1", "roles": []string{"controlplane", "etcd"}},
				{"name": "n2", "address": "10.0.0.2", "roles": []string{"worker", "etcd"}},
			},
		}
	}
	node := func(b map[string]any, i int) map[string]any { return b["nodes"].([]map[string]any)[i] }
	workers := func(n int, bad bool) []map[string]any {
		out := []map[string]any{{"name": "n1", "address": "10.0.0.1", "roles": []string{"controlplane", "etcd"}}}
		for i := range n {
			name := fmt.Sprintf("w%d", i)
			if bad {
				name = "Bad_Name"
			}
			out = append(out, map[string]any{"name": name, "address": fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&255, i&255), "roles": []string{"worker"}})
		}
		return out
	}
	cases := []struct {
		name     string
		mutate   func(b map[string]any)
		mentions []string
	}{
		{"a release zke cannot install", func(b map[string]any) {
			b["kubernetesVersion"] = "v1.20.0"
		}, []string{"kubernetesVersion", "supported: v1.36.3, v1.37.2"}},
		{"newline in cgroupRoot", func(b map[string]any) {
			node(b, 1)["kubelet"] = map[string]any{"cgroupRoot": "/zke\nstaticPodPath: /etc/kubernetes/manifests"}
		}, []string{"nodes[1].kubelet.cgroupRoot"}},
		{"command substitution in an extraArgs name", func(b map[string]any) {
			node(b, 1)["kubelet"] = map[string]any{"extraArgs": map[string]string{"$(id)": "1"}}
		}, []string{`nodes[1].kubelet.extraArgs["$(id)"]`, "lower-case letters, digits and '-'"}},
		{"newline in an extraArgs value", func(b map[string]any) {
			node(b, 1)["kubelet"] = map[string]any{"extraArgs": map[string]string{"v": "2\n--root-dir=/"}}
		}, []string{`nodes[1].kubelet.extraArgs["v"]`, "control character"}},
		{"pattern in prefixPath", func(b map[string]any) { node(b, 1)["prefixPath"] = "/opt/.*" }, []string{"nodes[1].prefixPath"}},
		{"quote in containerdSocket", func(b map[string]any) { node(b, 0)["containerdSocket"] = "/run/c'.sock" }, []string{"nodes[0].containerdSocket"}},
		{"option as sshUser", func(b map[string]any) { b["sshUser"] = "-oProxyCommand=id" }, []string{"sshUser", "may contain only letters"}},
		{"option as a node's sshUser", func(b map[string]any) { node(b, 0)["sshUser"] = "root;id" }, []string{"nodes[0].sshUser"}},
		{"label with a newline", func(b map[string]any) { node(b, 1)["labels"] = map[string]string{"zone": "a\nb"} }, []string{`nodes[1].labels["zone"]`}},
		{"shell in an image", func(b map[string]any) { b["images"] = map[string]string{"etcd": "etcd:$(id)"} }, []string{"images.etcd", "not an image reference"}},
		{"registry URL with credentials", func(b map[string]any) {
			b["privateRegistries"] = []map[string]string{{"url": "https://u:p@registry.local"}}
		}, []string{"privateRegistries[0].url", "user or password"}},
		{"iface with a command", func(b map[string]any) { b["network"] = map[string]string{"plugin": "bridge", "iface": "eth0;reboot"} }, []string{"network.iface"}},
		{"imageArchive naming a server file", func(b map[string]any) { b["imageArchive"] = "/etc/shadow" }, []string{"imageArchive", "absolute path", "--image-dir"}},
		{"imageArchive climbing out", func(b map[string]any) { b["imageArchive"] = "../../etc/shadow" }, []string{"imageArchive", `".."`}},
		{"10,000 nodes", func(b map[string]any) { b["nodes"] = workers(10000, false) }, []string{"nodes: 10001 nodes given; a cluster has at most 1000"}},
		{"thousands of bad nodes", func(b map[string]any) { b["nodes"] = workers(999, true) }, []string{"…and ", " more"}},
	}
	for _, tc := range cases {
		b := base()
		tc.mutate(b)
		status, body := admin.do(http.MethodPost, apiPath+"/clusters", b)
		expectError(t, tc.name, status, body, http.StatusUnprocessableEntity, "InvalidOption", tc.mentions...)
		if msg := str(body["message"]); len(msg) > 150_000 {
			t.Errorf("%s: message of %d bytes", tc.name, len(msg))
		} else if n := strings.Count(msg, "; nodes["); n > 99 {
			t.Errorf("%s: message lists %d node problems, want at most 100 and a summary", tc.name, n+1)
		}
	}
	if got := admin.names(); len(got) != 0 {
		t.Errorf("hostile configs left clusters %v", got)
	}
}
