package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// preflightBound is how long a create refused before any component starts
// may take: an SSH round and a few CRI calls per node, and a download from
// a mirror on loopback, on a busy machine.
const preflightBound = 90 * time.Second

// Every testbed host's containerd runs with its packaged CNI section and
// empty plugin directories, as on a machine without containernetworking-
// plugins; zke installs the plugins from the containernetworking/plugins
// release tarball, verified against the checksum published beside it.
// Here the cluster's artifactMirror serves a tampered tarball beside the
// genuine checksum: the create stops at the artifacts step, in seconds,
// with a reason naming the file and both checksums; nothing was written
// on any node (the artifacts step runs before the certificates). Preflight logged where each
// worker's containerd reads CNI configs and plugins, its cgroup driver,
// the host's cgroup version, and that the plugins will be installed.
func TestCreateStopsAtArtifactsOnATamperedMirror(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, Images: []string{testbed.KubernetesImage, testbed.PauseImage}})
	mirror := tamperedMirror(t)
	inst := startInstance(t, "")
	admin := inst.admin(t)
	body := clusterBody("tampered", hosts[0].Gateway+":8080", hosts)
	body["artifactMirror"] = mirror.url

	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	frames, _ := admin.followZkelog(t, "tampered", 0, 5*time.Minute, nil)
	took := time.Since(start)
	t.Logf("create refused in %s", took.Round(time.Millisecond))
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Unavailable" {
		logFrames(t, frames)
		t.Fatalf("the create ended %+v, want Unavailable", last)
	}
	if took > preflightBound {
		t.Errorf("the create took %s to fail, want under %s (the artifacts step, not a later one)", took, preflightBound)
	}
	for _, f := range frames {
		if f.Step != "" && !slices.Contains([]string{"connect", "preflight", "artifacts"}, f.Step) {
			logFrames(t, frames)
			t.Fatalf("the create reached step %q: %+v", f.Step, f)
		}
	}
	reason := str(admin.waitStatus("tampered", "Unavailable", 10*time.Second)["reason"])
	t.Logf("reason: %s", reason)
	for _, want := range []string{"artifacts", "cni-plugins-linux-amd64-" + testbed.CNIVersion + ".tgz", mirror.url, mirror.published, mirror.served, "tampered"} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason does not say %q", want)
		}
	}
	seen := map[string]bool{}
	for _, f := range frames {
		if f.Step == "preflight" && strings.Contains(f.Message, "containerd reads CNI configs from /etc/cni/net.d and plugins from ") {
			seen[f.Node] = true
			if !strings.Contains(f.Message, "cgroup driver cgroupfs") || !strings.Contains(f.Message, "cgroup v") {
				t.Errorf("the preflight line of %s lacks the cgroup driver or version: %s", f.Node, f.Message)
			}
		}
		if f.Step == "preflight" && strings.Contains(f.Message, "the artifacts step installs them") {
			seen[f.Node+" install"] = true
		}
	}
	for _, n := range []string{"host2", "host3"} {
		if !seen[n] || !seen[n+" install"] {
			logFrames(t, frames)
			t.Errorf("preflight did not log %s's CNI directories and that the plugins will be installed: %v", n, seen)
		}
	}
	for _, h := range hosts {
		hostClean(t, h)
	}
}

// mirrorServed is a file mirror on loopback and the checksums of its CNI
// plugins' tarball: the published one and the served file's.
type mirrorServed struct {
	url, published, served string
}

// tamperedMirror copies the testbin's CNI plugins' release with its
// published checksum into a new mirror, appends to the tarball, and serves
// the mirror.
func tamperedMirror(t *testing.T) mirrorServed {
	t.Helper()
	testbin, err := testbed.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(testbin, testbed.CNIPluginsRelease)
	dst := filepath.Join(dir, testbed.CNIPluginsRelease)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(src + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "tampered"...)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst+".sha256", sum, 0o644); err != nil {
		t.Fatal(err)
	}
	url, err := testbed.ServeMirror(filepath.Join(dir, "mirror"))
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.Sum256(data)
	return mirrorServed{url: url, published: strings.Fields(string(sum))[0], served: hex.EncodeToString(got[:])}
}
