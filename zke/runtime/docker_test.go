package runtime_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// testTimeout bounds each subtest's calls.
const testTimeout = time.Minute

// bed is one testbed host running dockerd, shared by the subtests of
// TestDocker, which run in order: Load first (the host starts without
// images), then everything that needs the busybox image.
type bed struct {
	h       *testbed.Host
	testbin string
}

// docker returns a Docker for cluster on the host's daemon, dialled
// directly (the SSH tunnel is the transport package's business).
func (b *bed) docker(t *testing.T, cluster string) *runtime.Docker {
	t.Helper()
	d, err := runtime.New(&net.Dialer{}, b.h.DockerSocket, runtime.Options{Node: b.h.Name, Cluster: cluster, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// cli runs the docker CLI on the host, as an operator would.
func (b *bed) cli(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	out, err := b.h.Exec(ctx, "docker", args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// sleeper is a long-running busybox container spec.
func sleeper(name string) runtime.ContainerSpec {
	return runtime.ContainerSpec{Name: name, Image: testbed.BusyboxImage, Cmd: []string{"sleep", "3600"}}
}

func TestDocker(t *testing.T) {
	testbed.Require(t, testbed.NeedRoot, testbed.NeedDocker, testbed.NeedTestbin)
	testbin, err := testbed.Testbin()
	if err != nil {
		t.Fatal(err)
	}
	b := &bed{h: testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, NoImages: true})[0], testbin: testbin}

	t.Run("Ping", b.testPing)
	t.Run("ImageMissing", b.testImageMissing)
	t.Run("Load", b.testLoad)
	b.loadBusybox(t) // when -run skipped Load
	t.Run("Ensure", b.testEnsure)
	t.Run("EnsureStoppedContainer", b.testEnsureStopped)
	t.Run("Stop", b.testStop)
	t.Run("ForeignContainer", b.testForeign)
	t.Run("RemoveAll", b.testRemoveAll)
	t.Run("RunJob", b.testRunJob)
	t.Run("RunJobCancel", b.testRunJobCancel)
	t.Run("KubeletStyle", b.testKubeletStyle)
	t.Run("ContainerLogs", b.testContainerLogs)
	t.Run("PullFailure", b.testPullFailure)
	t.Run("PullWithCredentials", b.testPullWithCredentials)
}

func (b *bed) testPing(t *testing.T) {
	info, err := b.docker(t, "c1").Ping(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info.APIVersion < "1.41" || info.OS != "linux" || info.Arch == "" || info.Version == "" ||
		(info.CgroupVersion != "1" && info.CgroupVersion != "2") || info.CgroupDriver != "cgroupfs" ||
		!strings.HasPrefix(info.DockerRootDir, b.h.Dir) {
		t.Errorf("Ping = %+v: want API >= 1.41, linux, cgroupfs and a root under %s", info, b.h.Dir)
	}
	t.Logf("docker %s, API %s, cgroup v%s", info.Version, info.APIVersion, info.CgroupVersion)
}
