package e2e

import (
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke"
)

// clusterDNSIP is the cluster DNS service IP of clusterBody's clusters
// (the default).
const clusterDNSIP = "10.43.0.10"

// checkCoreDNSCalm fails the test if a CoreDNS pod restarted or logged a
// loop.
func checkCoreDNSCalm(t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	pods, err := kube.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("CoreDNS pods: %v (%d)", err, len(pods.Items))
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 {
				t.Errorf("CoreDNS pod %s restarted %d times", p.Name, cs.RestartCount)
			}
		}
		rc, err := kube.CoreV1().Pods("kube-system").GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			t.Errorf("logs of %s: %v", p.Name, err)
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
		rc.Close()
		if strings.Contains(string(b), "Loop") {
			t.Errorf("CoreDNS pod %s logged a loop:\n%s", p.Name, b)
		}
	}
}

// checkPodAddressKept runs a server pod on one node and a client pod on
// another, and fails the test unless the server sees the client pod's
// own address (no SNAT between nodes). The pods' names start with
// prefix, so that a test may check more than once.
func checkPodAddressKept(t *testing.T, kube kubernetes.Interface, prefix, serverNode, clientNode string) {
	t.Helper()
	ctx := context.Background()
	const cgi = `printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\necho "peer=$REMOTE_ADDR"\n' > /www/cgi-bin/peer`
	server := busyboxPod(prefix+"-server", corev1.RestartPolicyNever, "sh", "-c", "mkdir -p /www/cgi-bin && "+cgi+" && chmod +x /www/cgi-bin/peer && exec httpd -f -p 8080 -h /www")
	server.Spec.NodeName = serverNode
	if _, err := kube.CoreV1().Pods("default").Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kube.CoreV1().Pods("default").Delete(ctx, server.Name, metav1.DeleteOptions{}) }()
	var serverIP string
	eventually(t, 3*time.Minute, "pod "+server.Name+" running", func() (bool, string) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, server.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		serverIP = p.Status.PodIP
		return p.Status.Phase == corev1.PodRunning && serverIP != "", string(p.Status.Phase)
	})
	client := busyboxPod(prefix+"-client", corev1.RestartPolicyOnFailure, "sh", "-c", "wget -qO- http://"+serverIP+":8080/cgi-bin/peer")
	client.Spec.NodeName = clientNode
	out := podOutput(t, kube, client)
	p, err := kube.CoreV1().Pods("default").Get(ctx, client.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// busybox httpd names an IPv4 peer as IPv4-mapped IPv6, in brackets.
	_, peer, _ := strings.Cut(out, "peer=")
	seen, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(peer), "[]"))
	if err != nil || seen.Unmap().String() != p.Status.PodIP {
		t.Errorf("the server pod on %s saw the client pod %s on %s as:\n%s", serverNode, p.Status.PodIP, clientNode, out)
	}
}

// podOutput creates pod, waits for it to succeed and returns its log; the
// pod is deleted at the end.
func podOutput(t *testing.T, kube kubernetes.Interface, pod *corev1.Pod) string {
	t.Helper()
	ctx := context.Background()
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	var out string
	eventually(t, 3*time.Minute, "pod "+pod.Name+" succeeded", func() (bool, string) {
		p, err := kube.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		rc, err := kube.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).Stream(ctx)
		if err != nil {
			return false, string(p.Status.Phase) + ": " + err.Error()
		}
		defer rc.Close()
		b, _ := io.ReadAll(io.LimitReader(rc, 1<<16))
		out = string(b)
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase) + ": " + out
	})
	return out
}

// startFakeDNS serves DNS over UDP on addr:53 until the test ends: an A
// record for name, NXDOMAIN for every other name. It counts the
// questions for name.
func startFakeDNS(t *testing.T, addr, name string, ip net.IP) *atomic.Int64 {
	t.Helper()
	pc, err := net.ListenPacket("udp4", net.JoinHostPort(addr, "53"))
	if err != nil {
		t.Fatalf("fake DNS on %s: %v", addr, err)
	}
	var asked atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			resp, q, ok := dnsAnswer(buf[:n], name, ip)
			if q == name {
				asked.Add(1)
			}
			if ok {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); wg.Wait() })
	return &asked
}

// dnsAnswer answers one DNS query (one question): an A record ip for name
// (lower case, with the final dot), NOERROR without answers for its other
// types, NXDOMAIN otherwise. It returns the question's name too.
func dnsAnswer(req []byte, name string, ip net.IP) ([]byte, string, bool) {
	if len(req) < 12 || be.BigEndian.Uint16(req[4:]) != 1 {
		return nil, "", false
	}
	var labels []string
	i := 12
	for i < len(req) && req[i] != 0 {
		l := int(req[i])
		if l > 63 || i+1+l > len(req) {
			return nil, "", false
		}
		labels = append(labels, strings.ToLower(string(req[i+1:i+1+l])))
		i += 1 + l
	}
	if i+5 > len(req) {
		return nil, "", false
	}
	qname, qtype := strings.Join(labels, ".")+".", be.BigEndian.Uint16(req[i+1:])
	question := req[12 : i+5]
	resp := append([]byte{}, req[:2]...)
	flags, answers := uint16(0x8180), uint16(0) // a response; recursion desired and available
	switch {
	case qname != name:
		flags |= 3 // NXDOMAIN
	case qtype == 1:
		answers = 1
	}
	resp = be.BigEndian.AppendUint16(resp, flags)
	resp = be.BigEndian.AppendUint16(resp, 1)
	resp = be.BigEndian.AppendUint16(resp, answers)
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, question...)
	if answers == 1 {
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4)
		resp = append(resp, ip.To4()...)
	}
	return resp, qname, true
}

// legacyBridgeScript sets what an earlier release's network step set on
// a worker (see plantLegacyBridge) and prints the boot id.
func legacyBridgeScript(podCIDR, gw string) string {
	return "set -e; ip route replace " + podCIDR + " via " + gw + " proto 77; " +
		"iptables -w -t nat -N ZKE-MASQ; iptables -w -t nat -A ZKE-MASQ -j RETURN; iptables -w -t nat -A POSTROUTING -j ZKE-MASQ; " +
		"cat /proc/sys/kernel/random/boot_id"
}

// plantLegacyBridge makes worker h of a bridge cluster look as an earlier
// release's network step left it: its route to peer's pod CIDR tagged
// proto 77 (the one flanneld keeps, re-tagged in place), the ZKE-MASQ nat
// chain with its jump, and the annotation with the boot those were set
// in. The check it returns, run after an update, fails the test unless the
// route is still there and the chain and the annotation are gone.
func plantLegacyBridge(t *testing.T, kube kubernetes.Interface, h, peer *testbed.Host) func() {
	t.Helper()
	ctx := context.Background()
	p, err := kube.CoreV1().Nodes().Get(ctx, peer.Name, metav1.GetOptions{})
	if err != nil || p.Spec.PodCIDR == "" {
		t.Fatalf("%s's pod CIDR: %v", peer.Name, err)
	}
	out, err := h.Run(ctx, legacyBridgeScript(p.Spec.PodCIDR, peer.Address))
	if err != nil {
		t.Fatalf("%s: plant an earlier release's bridge network: %v: %s", h.Name, err, out)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, zke.PodRoutesBootAnnotation, strings.TrimSpace(out))
	if _, err := kube.CoreV1().Nodes().Patch(ctx, h.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate %s: %v", h.Name, err)
	}
	return func() {
		t.Helper()
		if out, err := h.Run(ctx, "ip -4 route show proto 77; iptables -w -t nat -S ZKE-MASQ 2>&1 || true; iptables -w -t nat -S POSTROUTING"); err != nil ||
			!strings.Contains(out, p.Spec.PodCIDR+" via "+peer.Address) || strings.Contains(out, "-A ZKE-MASQ") || strings.Contains(out, "-j ZKE-MASQ") {
			t.Errorf("%s after the update: want the route to %s kept, ZKE-MASQ gone (%v):\n%s", h.Name, p.Spec.PodCIDR, err, out)
		}
		n, err := kube.CoreV1().Nodes().Get(ctx, h.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := n.Annotations[zke.PodRoutesBootAnnotation]; ok {
			t.Errorf("%s still carries %s=%q after the update", h.Name, zke.PodRoutesBootAnnotation, v)
		}
	}
}
