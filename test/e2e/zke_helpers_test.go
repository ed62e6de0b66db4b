package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// clusterBody is a create or update request for hosts: the first is
// controlplane and etcd, the next two workers and etcd, any further ones
// plain workers. Each kubelet gets its host's cgroup root (hosts share a
// kernel) and the testbed images are used.
func clusterBody(name, managerAddr string, hosts []*testbed.Host) map[string]any {
	var nodes []map[string]any
	for i, h := range hosts {
		n := map[string]any{
			"name":    h.Name,
			"address": h.Address,
			"kubelet": map[string]any{"cgroupRoot": h.CgroupRoot},
		}
		switch {
		case i == 0:
			n["roles"] = []string{"controlplane", "etcd"}
		case i < 3:
			n["roles"] = []string{"worker", "etcd"}
		default:
			n["roles"] = []string{"worker"}
		}
		if i > 0 {
			n["labels"] = map[string]string{"zke.test/worker": h.Name}
			n["taints"] = []map[string]string{{"key": "zke.test/dedicated", "value": "e2e", "effect": "NoSchedule"}}
		}
		nodes = append(nodes, n)
	}
	return map[string]any{
		"name":               name,
		"nodes":              nodes,
		"sshUser":            "root",
		"sshKey":             string(hosts[0].ClientKeyPEM),
		"singleCloudAddress": managerAddr,
		"network":            map[string]string{"plugin": "bridge"},
		// No images: zke's defaults, which the testbed's images are
		// named as; the kubelet and the CNI plugins come from the
		// testbin's file mirror (TestMain).
	}
}

// zkelogFrame is one frame of the zkelog websocket.
type zkelogFrame struct {
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	Level   string `json:"level"`
	Step    string `json:"step"`
	Node    string `json:"node"`
	Message string `json:"message"`
	Index   int    `json:"index"`
	Total   int    `json:"total"`
	Percent int    `json:"percent"`
	Status  string `json:"status"`
	// Skipped marks the progress frame of a step a resumed run did not
	// redo (verified in place).
	Skipped bool      `json:"skipped"`
	Time    time.Time `json:"time"`
}

// followZkelog reads the cluster's operation log from since until the
// server closes it (after the result frame) or d passes.
func (c *client) followZkelog(t *testing.T, cluster string, since uint64, d time.Duration, onFrame func(zkelogFrame)) ([]zkelogFrame, int) {
	t.Helper()
	u := strings.Replace(c.base, "http://", "ws://", 1) + "/apis/ws.zcloud.cn/v1/clusters/" + cluster + "/zkelog?token=" + url.QueryEscape(c.token)
	if since > 0 {
		u += "&since=" + strconv.FormatUint(since, 10)
	}
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("zkelog websocket: %v (%v)", err, resp)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var frames []zkelogFrame
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			code := -1
			if ce, ok := err.(*websocket.CloseError); ok {
				code = ce.Code
			}
			if ctx.Err() != nil {
				t.Fatalf("zkelog of %s did not finish within %s; last frames: %v", cluster, d, tail(frames, 5))
			}
			return frames, code
		}
		var f zkelogFrame
		if err := json.Unmarshal(msg, &f); err != nil {
			t.Fatalf("zkelog frame %s: %v", msg, err)
		}
		frames = append(frames, f)
		if onFrame != nil {
			onFrame(f)
		}
	}
}

func tail[T any](s []T, n int) []T {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// logFrames prints an operation log into the test log.
func logFrames(t *testing.T, frames []zkelogFrame) {
	for _, f := range frames {
		if f.Type == "log" {
			t.Logf("zkelog %d [%s] %s %s: %s", f.Seq, f.Step, f.Level, f.Node, f.Message)
		}
	}
}

func (c *client) mustDo(method, path string, body any, want int) map[string]any {
	c.t.Helper()
	status, resp := c.do(method, path, body)
	if status != want {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, status, resp, want)
	}
	return resp
}

// deleteCluster deletes cluster and waits, up to d, until it is gone.
func (c *client) deleteCluster(t *testing.T, cluster string, d time.Duration) {
	t.Helper()
	c.mustDo(http.MethodDelete, apiPath+"/clusters/"+cluster, nil, http.StatusAccepted)
	eventually(t, d, "cluster "+cluster+" deleted", func() (bool, string) {
		code, b := c.cluster(cluster)
		return code == http.StatusNotFound, str(b["status"]) + " " + str(b["reason"])
	})
}

// hostClean fails the test if zke left anything of its own on h.
func hostClean(t *testing.T, h *testbed.Host) {
	t.Helper()
	nodeClean(t, h.Name, h, h.CgroupRoot)
}

// scriptRunner runs a shell script on a node: a testbed host or VM.
type scriptRunner interface {
	Run(ctx context.Context, script string) (string, error)
}

// nodeClean fails the test if zke left anything of its own on the node
// h, named name, whose kubelet had the cgroup root cgroupRoot.
func nodeClean(t *testing.T, name string, h scriptRunner, cgroupRoot string) {
	t.Helper()
	ctx := context.Background()
	out, err := h.Run(ctx, "docker ps -aq --filter label=io.zke.managed=true")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("%s: zke containers left: %q (%v)", name, out, err)
	}
	if out, _ := h.Run(ctx, "iptables -w -t nat -S ZKE-MASQ 2>/dev/null; iptables -w -t nat -S POSTROUTING | grep ZKE-MASQ"); strings.TrimSpace(out) != "" {
		t.Errorf("%s: zke's nat rules left: %q", name, out)
	}
	// kube-proxy's and the kubelet's rules, their pods' network state and
	// cgroups go with the cluster.
	if out, _ := h.Run(ctx, "iptables-save 2>/dev/null | grep -E '^(:|-A )(KUBE-|CNI-|FLANNEL-)|-j (KUBE-|CNI-|FLANNEL-)'"); strings.TrimSpace(out) != "" {
		t.Errorf("%s: kube-proxy's, the kubelet's, flannel's or the CNI plugins' rules left:\n%s", name, out)
	}
	// flanneld's tunnel device, lease and host-gw routes go with the
	// cluster.
	if out, _ := h.Run(ctx, "ip -o link show flannel.1 2>/dev/null; ls -A /run/flannel 2>/dev/null; ip -4 route show root 10.42.0.0/16 | grep ' via '; true"); strings.TrimSpace(out) != "" {
		t.Errorf("%s: flannel's device, lease or routes left:\n%s", name, out)
	}
	if out, _ := h.Run(ctx, "ls -A /var/run/netns 2>/dev/null; ls -A /var/lib/cni/networks 2>/dev/null; "+
		"for b in /sys/fs/cgroup /sys/fs/cgroup/*; do [ -d \"$b"+cgroupRoot+"/kubepods\" ] && echo \"$b"+cgroupRoot+"/kubepods\"; done; [ -d /sys/fs/cgroup/kubepods.slice ] && echo kubepods.slice; true"); strings.TrimSpace(out) != "" {
		t.Errorf("%s: pod network namespaces, IPAM state or kubepods cgroups left:\n%s", name, out)
	}
	// The testbed mounts /var/lib/etcd and /var/lib/kubelet into each
	// host, so those directories stay; what zke wrote in them must not.
	// The CNI plugin directories start empty on every host: the plugins
	// zke installed there must be gone.
	for _, p := range []string{"/etc/kubernetes/ssl", "/var/lib/etcd", "/var/lib/kubelet", "/etc/cni/net.d/10-zke-bridge.conflist", "/opt/cni/bin", "/usr/lib/cni"} {
		out, err := h.Run(ctx, "if [ -d "+p+" ]; then ls -A "+p+"; elif [ -e "+p+" ]; then echo "+p+"; fi")
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("%s: %s still holds %q (%v)", name, p, strings.TrimSpace(out), err)
		}
	}
}

// startForeign runs a container that is not zke's on h and returns a
// check that it still runs.
func startForeign(t *testing.T, h *testbed.Host) func() {
	t.Helper()
	ctx := context.Background()
	if out, err := h.Exec(ctx, "docker", "run", "-d", "--name", "not-zke", "--network", "host", testbed.BusyboxImage, "sleep", "3600"); err != nil {
		t.Fatalf("%s: start a foreign container: %v: %s", h.Name, err, out)
	}
	return func() {
		t.Helper()
		out, err := h.Exec(ctx, "docker", "inspect", "-f", "{{.State.Running}}", "not-zke")
		if err != nil || strings.TrimSpace(out) != "true" {
			t.Errorf("%s: the foreign container was touched: %q %v", h.Name, out, err)
		}
	}
}

// followZkelogUntil reads the zkelog until stop returns true for a frame,
// the stream ends, or d passes.
func (c *client) followZkelogUntil(t *testing.T, cluster string, d time.Duration, stop func(zkelogFrame) bool) {
	u := strings.Replace(c.base, "http://", "ws://", 1) + "/apis/ws.zcloud.cn/v1/clusters/" + cluster + "/zkelog?token=" + url.QueryEscape(c.token)
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, _, err := dialer.Dial(u, nil)
	if err != nil {
		t.Errorf("zkelog websocket: %v", err)
		return
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(d))
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var f zkelogFrame
		if json.Unmarshal(msg, &f) == nil && stop(f) {
			return
		}
	}
}

// startForeignCtr runs a container that is not the cluster's in h's
// containerd, in the k8s.io namespace a kubelet uses, and returns a check
// that it still runs and that no container of a kubelet's pod is left.
func startForeignCtr(t *testing.T, h *testbed.Host) func() {
	t.Helper()
	ctx := context.Background()
	if out, err := h.Exec(ctx, "ctr", "-n", "k8s.io", "run", "-d", testbed.BusyboxImage, "not-zke-ctr", "sleep", "3600"); err != nil {
		t.Fatalf("%s: start a foreign containerd container: %v: %s", h.Name, err, out)
	}
	return func() {
		t.Helper()
		out, err := h.Exec(ctx, "ctr", "-n", "k8s.io", "tasks", "ls")
		if err != nil || !regexp.MustCompile(`(?m)^not-zke-ctr\s+\d+\s+RUNNING`).MatchString(out) {
			t.Errorf("%s: the foreign containerd container was touched: %q %v", h.Name, out, err)
		}
		out, err = h.Exec(ctx, "ctr", "-n", "k8s.io", "containers", "ls", "-q", `labels."io.kubernetes.pod.uid"`)
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("%s: containers of the cluster's pods left: %q %v", h.Name, out, err)
		}
	}
}

// checkEtcdMembers fails the test unless the etcd cluster, asked through
// h's member, has exactly the members named, each started and voting.
func checkEtcdMembers(t *testing.T, h *testbed.Host, names ...string) {
	t.Helper()
	out, err := h.Exec(context.Background(), "docker", "exec", "etcd", "etcdctl",
		"--endpoints=https://"+h.Address+":2379",
		"--cacert=/etc/kubernetes/ssl/kube-etcd-ca.pem",
		"--cert=/etc/kubernetes/ssl/kube-etcd-server.pem",
		"--key=/etc/kubernetes/ssl/kube-etcd-server-key.pem",
		"member", "list", "-w", "json")
	if err != nil {
		t.Fatalf("etcdctl member list on %s: %v: %s", h.Name, err, out)
	}
	var ml struct {
		Members []struct {
			Name       string   `json:"name"`
			ClientURLs []string `json:"clientURLs"`
			IsLearner  bool     `json:"isLearner"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &ml); err != nil {
		t.Fatalf("member list: %v: %s", err, out)
	}
	var got []string
	for _, m := range ml.Members {
		got = append(got, m.Name)
		if len(m.ClientURLs) == 0 {
			t.Errorf("etcd member %s never started", m.Name)
		}
		if m.IsLearner {
			t.Errorf("etcd member %s is still a learner", m.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, names) {
		t.Errorf("etcd members %v, want %v", got, names)
	}
}

// checkClusterDNS runs a pod on a worker that resolves the kubernetes
// service's name through the cluster DNS and fails the test unless the
// answer is the service's cluster IP.
func checkClusterDNS(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	svc, err := kube.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := busyboxPod("dns-check", corev1.RestartPolicyOnFailure, "nslookup", "kubernetes.default.svc.cluster.local")
	if out := podOutput(t, kube, pod); !strings.Contains(out, svc.Spec.ClusterIP) {
		t.Errorf("pod dns-check did not resolve the kubernetes service to %s:\n%s", svc.Spec.ClusterIP, out)
	}
	_ = kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
}

// kubeconfig downloads the cluster's admin kubeconfig.
func (c *client) kubeconfig(cluster string) []byte {
	c.t.Helper()
	status, raw := c.raw(http.MethodGet, apiPath+"/clusters/"+cluster+"/kubeconfigs/kube-admin?download=1", nil)
	if status != http.StatusOK {
		c.t.Fatalf("kubeconfig of %s: %d %s", cluster, status, raw)
	}
	return raw
}

// busyboxPod is a pod in default that runs command in the test busybox
// image and tolerates the test workers' taint.
func busyboxPod(name string, restart corev1.RestartPolicy, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			Tolerations:   []corev1.Toleration{{Key: "zke.test/dedicated", Operator: corev1.TolerationOpEqual, Value: "e2e", Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy: restart,
			Containers: []corev1.Container{{
				Name: "main", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever, Command: command,
			}},
		},
	}
}
