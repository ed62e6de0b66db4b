package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// preflightBound is how long a create refused at preflight may take: an
// SSH round and a few CRI calls per node, on a busy machine.
const preflightBound = 90 * time.Second

// A worker whose containerd runs with its default CNI section looks for
// CNI plugins in /opt/cni/bin, which is empty on a stock Debian/Ubuntu
// host. The create fails at preflight, in seconds, with a reason naming
// the node, the directory containerd searches, the plugins it lacks and
// the fix; nothing was started on any node. The other worker's
// containerd (host3: plugins in /usr/lib/cni) passes, and preflight logs where
// each worker's containerd reads CNI configs and plugins, its cgroup
// driver and the host's cgroup version.
func TestCreateRefusedAtPreflightWhenContainerdLacksCNIPlugins(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true, DefaultCNI: map[int]bool{2: true},
		Images: []string{testbed.KubernetesImage, testbed.PauseImage}})
	inst := startInstance(t, "")
	admin := inst.admin(t)
	body := clusterBody("nocni", hosts[0].Gateway+":8080", hosts)

	start := time.Now()
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	frames, _ := admin.followZkelog(t, "nocni", 0, 5*time.Minute, nil)
	took := time.Since(start)
	t.Logf("create refused in %s", took.Round(time.Millisecond))
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Unavailable" {
		logFrames(t, frames)
		t.Fatalf("the create ended %+v, want Unavailable", last)
	}
	if took > preflightBound {
		t.Errorf("the create took %s to fail, want under %s (preflight, not a later step)", took, preflightBound)
	}
	for _, f := range frames {
		if f.Step != "" && !slices.Contains([]string{"connect", "preflight"}, f.Step) {
			logFrames(t, frames)
			t.Fatalf("the create reached step %q: %+v", f.Step, f)
		}
	}
	reason := str(admin.waitStatus("nocni", "Unavailable", 10*time.Second)["reason"])
	t.Logf("reason: %s", reason)
	for _, want := range []string{"containerd on host2 looks for CNI plugins in /opt/cni/bin, which lacks bridge, host-local, portmap, loopback",
		"apt-get install containernetworking-plugins", "restart containerd"} {
		if !strings.Contains(reason, want) {
			t.Errorf("the reason does not say %q", want)
		}
	}
	if strings.Contains(reason, "containerd on host3") {
		t.Errorf("the reason blames host3, whose containerd has its plugins: %s", reason)
	}
	seen := map[string]bool{}
	for _, f := range frames {
		if f.Step == "preflight" && strings.Contains(f.Message, "containerd reads CNI configs from /etc/cni/net.d and plugins from ") {
			seen[f.Node] = true
			t.Logf("preflight on %s: %s", f.Node, f.Message)
			if !strings.Contains(f.Message, "cgroup driver cgroupfs") || !strings.Contains(f.Message, "cgroup v") {
				t.Errorf("the preflight line of %s lacks the cgroup driver or version: %s", f.Node, f.Message)
			}
		}
	}
	if !seen["host2"] || !seen["host3"] {
		logFrames(t, frames)
		t.Errorf("preflight did not log each worker's CNI directories and cgroups: %v", seen)
	}
	for _, h := range hosts {
		hostClean(t, h)
	}
}
