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
// release tarball and the kubelet from its release binary, each verified
// against the checksum published beside it. Here the cluster's
// artifactMirror serves a tampered kubelet beside the genuine checksum:
// the create stops at the artifacts step, in seconds, with a reason
// naming the file, where it came from and both checksums; nothing was
// written on any node (the artifacts step runs before the certificates).
// Preflight logged where each worker's containerd reads CNI configs and
// plugins, its cgroup driver, the host's cgroup version, and that the
// plugins will be installed.
func TestCreateStopsAtArtifactsOnATamperedMirror(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, Images: []string{testbed.KubeletImage, testbed.PauseImage}})
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
	for _, want := range []string{"artifacts", "kubelet from " + mirror.url + "dl.k8s.io/release/" + testbed.KubeVersion, mirror.published, mirror.served, "tampered"} {
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

// mirrorServed is a file mirror on loopback and the checksums of its
// kubelet: the published one and the served file's.
type mirrorServed struct {
	url, published, served string
}

// kubeletRelease is the kubelet of KubeVersion in the testbin's mirror, at
// the path dl.k8s.io publishes it under.
const kubeletRelease = "mirror/dl.k8s.io/release/" + testbed.KubeVersion + "/bin/linux/amd64/kubelet"

// tamperedMirror copies the testbin's mirror of the release files a create
// fetches (the CNI plugins' tarball and the kubelet, each with its
// published checksum) into a new mirror, appends to the kubelet, and
// serves the mirror.
func tamperedMirror(t *testing.T) mirrorServed {
	t.Helper()
	testbin, err := testbed.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var m mirrorServed
	for _, rel := range []string{testbed.CNIPluginsRelease, kubeletRelease} {
		for _, f := range []string{rel, rel + ".sha256"} {
			data, err := os.ReadFile(filepath.Join(testbin, f))
			if err != nil {
				t.Fatal(err)
			}
			switch f {
			case kubeletRelease:
				data = append(data, "tampered"...)
				got := sha256.Sum256(data)
				m.served = hex.EncodeToString(got[:])
			case kubeletRelease + ".sha256":
				m.published = strings.Fields(string(data))[0]
			}
			dst := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m.url, err = testbed.ServeMirror(filepath.Join(dir, "mirror")); err != nil {
		t.Fatal(err)
	}
	return m
}
