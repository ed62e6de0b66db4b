package main

import (
	"slices"
	"strings"
	"testing"
)

// TestLoadBalancerImages: the shared endpoint's two images carry zke's
// default names, hold their program where the upstream image has it, and
// haproxy's runs as the unprivileged user haproxy and stops on SIGUSR1,
// as Docker's official image does. It needs Debian's haproxy and
// keepalived (make testbin needs them too).
func TestLoadBalancerImages(t *testing.T) {
	base := baseRoot("/bin-dir", []string{"busybox", "sh"})
	imgs, err := loadBalancerImages("/usr/sbin", []string{"v1.37.2", "v1.36.3"}, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 2 {
		t.Fatalf("%d images, want haproxy's and keepalived's", len(imgs))
	}
	haproxy, keepalived := imgs[0], imgs[1]
	if !slices.Equal(haproxy.tags, []string{"haproxy:3.2.21"}) || !slices.Equal(keepalived.tags, []string{"osixia/keepalived:2.3.4"}) {
		t.Errorf("tags %q and %q", haproxy.tags, keepalived.tags)
	}
	if haproxy.user != "haproxy" || haproxy.stopSignal != "SIGUSR1" || keepalived.user != "" {
		t.Errorf("haproxy runs as %q stopped by %q, keepalived as %q", haproxy.user, haproxy.stopSignal, keepalived.user)
	}
	contents := func(img image) map[string]entry {
		out := map[string]entry{}
		for _, e := range img.root {
			out[e.name] = e
		}
		return out
	}
	h, k := contents(haproxy), contents(keepalived)
	if h["usr/local/sbin/haproxy"].src != "/usr/sbin/haproxy" || k["usr/local/sbin/keepalived"].src != "/usr/sbin/keepalived" {
		t.Errorf("the programs are not in /usr/local/sbin: %+v, %+v", h["usr/local/sbin/haproxy"], k["usr/local/sbin/keepalived"])
	}
	if !strings.Contains(h["etc/passwd"].content, "haproxy:x:99:99:") || !strings.Contains(h["etc/group"].content, "haproxy:x:99:") {
		t.Errorf("haproxy's image has no user haproxy:\n%s", h["etc/passwd"].content)
	}
	if !strings.Contains(k["etc/passwd"].content, "root:x:0:0:") {
		t.Errorf("keepalived's image lost the base passwd")
	}
	if _, ok := h["bin/sh"]; !ok {
		t.Error("haproxy's image has no shell")
	}
}
