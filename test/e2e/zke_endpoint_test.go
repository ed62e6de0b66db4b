package e2e

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke"
)

// TestSharedEndpointSurvivesAControlPlaneNode: a cluster with two
// control-plane nodes and a controlPlaneEndpoint keeps its API answering
// through the served admin kubeconfig while either control-plane node has
// every container stopped; the first control-plane node can then be
// removed and a fresh host added in its place, etcd keeping its quorum;
// the leaf certificates and then the certificate authorities are rotated
// with the API answering throughout. A VIP another machine has is
// refused at preflight.
func TestSharedEndpointSurvivesAControlPlaneNode(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	all := testbed.StartHosts(t, 4, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := all[0].Gateway + ":8080"
	vip := unusedAddress(t, all[0])
	roles := map[string][]string{
		all[0].Name: {"controlplane", "etcd"},
		all[1].Name: {"controlplane", "etcd"},
		all[2].Name: {"etcd", "worker"},
		all[3].Name: {"controlplane", "etcd"},
	}
	body := func(hosts ...*testbed.Host) map[string]any {
		b := clusterBody("ha", manager, hosts)
		var nodes []map[string]any
		for _, n := range b["nodes"].([]map[string]any) {
			n["roles"] = roles[n["name"].(string)]
			delete(n, "taints")
			nodes = append(nodes, n)
		}
		b["nodes"] = nodes
		b["controlPlaneEndpoint"] = map[string]string{"vip": vip}
		return b
	}
	apply := func(what, method, path string, b map[string]any, want int) {
		t.Helper()
		admin.mustDo(method, path, b, want)
		frames, _ := admin.followZkelog(t, "ha", 0, 10*time.Minute, nil)
		if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
			logFrames(t, frames)
			t.Fatalf("%s ended %+v", what, last)
		}
	}

	// A VIP another machine answers for (host4, not yet in the cluster)
	// is refused before anything is installed; freed, a retry creates.
	spareVIP := func(verb string) {
		t.Helper()
		script := `d=$(ip -o -4 addr show to ` + all[3].Address + `/32 | awk '{print $2}'); ip addr ` + verb + ` ` + vip + `/32 dev "${d%@*}"`
		if out, err := all[3].Exec(context.Background(), "sh", "-c", script); err != nil {
			t.Fatalf("ip addr %s %s on %s: %v: %s", verb, vip, all[3].Name, err, out)
		}
	}
	spareVIP("add")
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body(all[:3]...), http.StatusCreated)
	admin.failedWith(t, "ha", "a create with the VIP in use", "controlPlaneEndpoint.vip "+vip+" is in use", "MAC address", "give an unused address")
	spareVIP("del")
	apply("the create's retry", http.MethodPost, apiPath+"/clusters/ha?action=retry", nil, http.StatusOK)
	kc := admin.kubeconfig("ha")
	if !strings.Contains(string(kc), "server: https://"+vip+":8443") {
		t.Fatalf("the served kubeconfig does not use the shared endpoint %s:8443:\n%s", vip, serverLine(kc))
	}
	kube := kubeClient(t, kc)
	answers(t, kube, "after the create")
	// The bridge worker's routes are flanneld's, with its host-gw
	// backend: nothing of an earlier release's is on its Node.
	worker, err := kube.CoreV1().Nodes().Get(context.Background(), all[2].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := worker.Annotations["flannel.alpha.coreos.com/backend-type"]; got != "host-gw" {
		t.Errorf("worker %s: flannel's backend-type annotation is %q, want host-gw", all[2].Name, got)
	}
	if got, ok := worker.Annotations[zke.PodRoutesBootAnnotation]; ok {
		t.Errorf("worker %s carries %s=%q, which only an earlier release's bridge network set", all[2].Name, zke.PodRoutesBootAnnotation, got)
	}

	// Every container of either control-plane node stopped: the API
	// answers through the endpoint within seconds.
	for _, h := range all[:2] {
		zkeDocker(t, h, "stop")
		stopped := time.Now()
		answers(t, kube, "with every container of "+h.Name+" stopped")
		t.Logf("API answering %s after every container of %s stopped", time.Since(stopped).Round(100*time.Millisecond), h.Name)
		zkeDocker(t, h, "start")
		etcdBack(t, h)
	}

	// The first control-plane node removed (quorum kept: 2 of 3 etcd
	// members), then a fresh host added as control plane and etcd.
	apply("removing "+all[0].Name, http.MethodPut, apiPath+"/clusters/ha", body(all[1:3]...), http.StatusOK)
	answers(t, kube, "after removing "+all[0].Name)
	checkEtcdMembers(t, all[1], all[1].Name, all[2].Name)
	hostClean(t, all[0])
	apply("adding "+all[3].Name, http.MethodPut, apiPath+"/clusters/ha", body(all[1:]...), http.StatusOK)
	answers(t, kube, "after adding "+all[3].Name)
	checkEtcdMembers(t, all[1], all[1].Name, all[2].Name, all[3].Name)
	// The new control-plane node serves behind the endpoint too.
	zkeDocker(t, all[1], "stop")
	answers(t, kube, "with "+all[1].Name+" stopped, "+all[3].Name+" serving")
	zkeDocker(t, all[1], "start")
	etcdBack(t, all[1])
	answers(t, kube, "with "+all[1].Name+" back")

	// The leaf certificates, then the certificate authorities, rotated
	// with two control-plane nodes: the API answers throughout, the old
	// admin kubeconfig works while the roll goes on and is refused after.
	rotateWatched(t, admin, "ha", vip+":8443", false, all[1], all[1].Name, all[2].Name, all[3].Name)
	rotateWatched(t, admin, "ha", vip+":8443", true, all[1], all[1].Name, all[2].Name, all[3].Name)

	admin.deleteCluster(t, "ha", 5*time.Minute)
	for _, h := range all[1:] {
		hostClean(t, h)
	}
}

// etcdBack waits (bounded) for etcd on h to answer healthy.
func etcdBack(t *testing.T, h *testbed.Host) {
	t.Helper()
	eventually(t, 2*time.Minute, "etcd on "+h.Name+" back", func() (bool, string) {
		out, err := h.Exec(context.Background(), "docker", "exec", "etcd", "etcdctl", "--endpoints=https://"+h.Address+":2379",
			"--cacert=/etc/kubernetes/ssl/kube-etcd-ca.pem", "--cert=/etc/kubernetes/ssl/kube-etcd-server.pem",
			"--key=/etc/kubernetes/ssl/kube-etcd-server-key.pem", "endpoint", "health")
		return err == nil, out
	})
}

// unusedAddress is an address of h's network that no testbed host has:
// the testbed numbers hosts from .10 up.
func unusedAddress(t *testing.T, h *testbed.Host) string {
	t.Helper()
	a, err := netip.ParseAddr(h.Address)
	if err != nil {
		t.Fatal(err)
	}
	b := a.As4()
	b[3] = 200
	return netip.AddrFrom4(b).String()
}

// zkeDocker runs docker stop or start on every container of cluster ha on h.
func zkeDocker(t *testing.T, h *testbed.Host, verb string) {
	t.Helper()
	list := "docker ps -q --filter label=io.zke.cluster=ha"
	if verb == "start" {
		list = "docker ps -aq --filter label=io.zke.cluster=ha --filter status=exited"
	}
	if out, err := h.Exec(context.Background(), "sh", "-c", "ids=$("+list+"); [ -z \"$ids\" ] || docker "+verb+" $ids"); err != nil {
		t.Fatalf("docker %s on %s: %v: %s", verb, h.Name, err, out)
	}
}

// answers waits (bounded) for the API to list namespaces and nodes through
// kube.
func answers(t *testing.T, kube kubernetes.Interface, when string) {
	t.Helper()
	eventually(t, 90*time.Second, "the API answering "+when, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			return false, err.Error()
		}
		if _, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// serverLine is the kubeconfig's server line, for messages.
func serverLine(kc []byte) string {
	for _, l := range strings.Split(string(kc), "\n") {
		if strings.Contains(l, "server:") {
			return l
		}
	}
	return "(no server line)"
}
