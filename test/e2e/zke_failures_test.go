package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// setLink takes h's network link down (as if it died: SSH to it gets no
// answer) or brings it back up.
func setLink(t *testing.T, h *testbed.Host, up bool) {
	t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	cmd := "for l in /sys/class/net/*; do n=${l##*/}; [ \"$n\" = lo ] || ip link set \"$n\" " + state + "; done"
	if out, err := h.Run(context.Background(), cmd); err != nil {
		t.Fatalf("%s: set its links %s: %v: %s", h.Name, state, err, out)
	}
}

// otherKeyPEM is a private key no host authorises.
func otherKeyPEM(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "not-authorised")
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(block))
}

// failedWith waits for the cluster's operation to end, checks that it
// ended Unavailable, and that the reason names node and carries every one
// of hints.
func (c *client) failedWith(t *testing.T, cluster, what, node string, hints ...string) {
	t.Helper()
	frames, _ := c.followZkelog(t, cluster, 0, 5*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Unavailable" {
		logFrames(t, frames)
		t.Fatalf("%s: the operation ended %+v, want Unavailable", what, last)
	}
	got := c.waitStatus(cluster, "Unavailable", 10*time.Second)
	reason := str(got["reason"])
	t.Logf("%s: %s", what, reason)
	for _, want := range append([]string{node}, hints...) {
		if !strings.Contains(reason, want) {
			t.Errorf("%s: the reason %q does not say %q", what, reason, want)
		}
	}
}

// Each of the failures an admin meets first (a key the hosts do not
// accept, a Docker socket that is not there, a node that does not answer,
// a host key that changed) ends the create Unavailable with an error that
// names the node and says what to fix, leaves nothing on the hosts, and
// once fixed a retry brings the cluster up. An update then grows etcd
// by one member without losing the cluster.
//
// The hosts are air-gapped: neither their Docker nor their containerd
// has an image zke runs (only the busybox of the test's pods, and
// containerd's sandbox image). The cluster's imageArchive holds them all:
// the archive `singlecloud artifacts bundle` wrote from a registry on
// loopback serving the testbin's images under their upstream names. zke
// loads it into Docker and copies the pod images into each worker's
// containerd.
func TestCreateFailuresNameTheNodeAndRetryRecovers(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	all := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, Images: []string{testbed.BusyboxImage}})
	hosts := all[:2]
	archive := bundleFromRegistry(t)
	inst := startInstance(t, "")
	admin := inst.admin(t)
	manager := hosts[0].Gateway + ":8080"
	// The archive goes in the server's image directory (<db dir>/images
	// by default) and is named relative to it.
	archiveName := filepath.Join("bundle", filepath.Base(archive))
	placeInImageDir(t, archive, filepath.Join(inst.dir, "images", archiveName))
	withArchive := func(body map[string]any) map[string]any {
		body["imageArchive"] = archiveName
		return body
	}
	good := func() map[string]any { return withArchive(clusterBody("bad", manager, hosts)) }
	allClean := func() {
		t.Helper()
		for _, h := range hosts {
			hostClean(t, h)
		}
	}

	// 1. A key no host authorises.
	body := good()
	body["sshKey"] = otherKeyPEM(t)
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	admin.failedWith(t, "bad", "wrong ssh key", "host1", "authentication failed", "authorized_keys")
	allClean()

	// 2. host2's Docker socket is not where the config says.
	body = good()
	nodes := body["nodes"].([]map[string]any)
	nodes[1]["dockerSocket"] = "/run/no-such-docker.sock"
	admin.mustDo(http.MethodPut, apiPath+"/clusters/bad", body, http.StatusOK)
	admin.failedWith(t, "bad", "missing docker socket", "host2", "/run/no-such-docker.sock does not exist on host2")
	allClean()

	// 3. host2 does not answer.
	setLink(t, hosts[1], false)
	admin.mustDo(http.MethodPut, apiPath+"/clusters/bad", good(), http.StatusOK)
	admin.failedWith(t, "bad", "unreachable node", "host2", "check that host2 is up")
	setLink(t, hosts[1], true)
	allClean()

	// 4. host1 was "reinstalled": its host key is not the one pinned when
	// it was first reached (in 2).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hosts[0].RotateHostKey(ctx); err != nil {
		t.Fatal(err)
	}
	admin.mustDo(http.MethodPost, apiPath+"/clusters/bad?action=retry", nil, http.StatusOK)
	admin.failedWith(t, "bad", "changed host key", "host1", "host key mismatch", "forgetHostKey")
	allClean()
	status, resp := admin.do(http.MethodPost, apiPath+"/clusters/bad?action=forgetHostKey", map[string]string{"node": "host9"})
	expectError(t, "forget the host key of an unknown node", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "node", "host9")
	admin.mustDo(http.MethodPost, apiPath+"/clusters/bad?action=forgetHostKey", map[string]string{"node": "host1"}, http.StatusOK)

	// Fixed: the retry brings the cluster up.
	admin.mustDo(http.MethodPost, apiPath+"/clusters/bad?action=retry", nil, http.StatusOK)
	frames, _ := admin.followZkelog(t, "bad", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the retry after fixing everything ended %+v", last)
	}
	for _, h := range hosts {
		for name, n := range zkeContainers(t, h) {
			if n != 1 {
				t.Errorf("%s: %d containers named %s", h.Name, n, name)
			}
		}
	}
	checkEtcdMembers(t, hosts[0], "host1", "host2")
	copied := false
	for _, f := range frames {
		copied = copied || (f.Type == "log" && f.Node == "host2" && strings.Contains(f.Message, "copying "+testbed.CoreDNSImage+" from Docker into containerd"))
	}
	if !copied {
		t.Error("the log does not show CoreDNS's image copied into host2's containerd")
	}
	for _, h := range hosts {
		loaded := false
		for _, f := range frames {
			loaded = loaded || (f.Type == "log" && f.Node == h.Name && f.Message == "loading "+archiveName)
		}
		if !loaded {
			t.Errorf("the log does not show the bundle loaded on %s", h.Name)
		}
	}
	checkClusterDNS(t, kubeClient(t, admin.kubeconfig("bad")))

	// An update adds an etcd member (host3, a worker too): it joins as a
	// learner, is promoted, and the API server uses it.
	admin.mustDo(http.MethodPut, apiPath+"/clusters/bad", withArchive(clusterBody("bad", manager, all)), http.StatusOK)
	frames, _ = admin.followZkelog(t, "bad", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("adding an etcd member ended %+v", last)
	}
	checkEtcdMembers(t, all[2], "host1", "host2", "host3")
	// A context of its own: the one made for the host key rotation above
	// may have run out during the create and the update.
	inspectCtx, cancelInspect := context.WithTimeout(context.Background(), time.Minute)
	defer cancelInspect()
	out, err := all[0].Exec(inspectCtx, "docker", "inspect", "-f", "{{json .Args}}", "kube-apiserver")
	if err != nil || !strings.Contains(out, "https://"+all[2].Address+":2379") {
		t.Errorf("kube-apiserver does not use the new etcd member: %v: %s", err, out)
	}

	admin.deleteCluster(t, "bad", 3*time.Minute)
	for _, h := range all {
		hostClean(t, h)
	}
}
