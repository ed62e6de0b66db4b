package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestSweepRemovesLeftoversOfADeadTestBinary plants what a test binary
// killed mid-test leaves in its slot (its cleanup never ran: a bridge,
// links, a cgroup with a process in it, the directory) and checks that the
// sweep done when hosts are started removes all of it.
func TestSweepRemovesLeftoversOfADeadTestBinary(t *testing.T) {
	Require(t, NeedRoot, NeedNamespaces)
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	hiers := hierarchies(mounts)
	dead := &slot{index: slotCount - 1} // a slot nobody holds
	host := dead.hostPrefix() + "1"
	router := dead.routerName()
	t.Cleanup(func() { _ = dead.sweep(hiers) })
	if err := ipCommand(fmt.Sprintf("link add %[1]s type bridge\nlink add %[2]s type veth peer name %[2]sp\n"+
		"link add %[3]s type bridge\nlink add %[4]sa type veth peer name %[4]sb\n", dead.bridge(), host, dead.secondBridge(), router)); err != nil {
		t.Fatal(err)
	}
	if err := createCgroup(hiers, "/"+router); err != nil {
		t.Fatal(err)
	}
	if err := createCgroup(hiers, "/"+host+"/docker/orphan"); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sh", "-c", attachScript(hiers, "/"+host+"/docker/orphan"), "sh", "sleep", "3600")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	// A real leftover is already in its cgroup; wait until this one is.
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	if err := poll(ctx, func(context.Context) error {
		if !slices.Contains(cgroupPids(hiers, "/"+host), orphan.Process.Pid) {
			return errors.New("orphan not in its cgroup yet")
		}
		return nil
	}); err != nil {
		orphan.Process.Kill()
		t.Fatal(err)
	}
	if err := dead.makeDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dead.dir(), "h1", "containerd"), 0o755); err != nil {
		t.Fatal(err)
	}

	if err := sweepStale(hiers, -1); err != nil {
		t.Fatalf("sweep: %v", err)
	}

	if err := <-exited; err == nil {
		t.Error("the orphan process was not killed")
	}
	for _, name := range []string{dead.bridge(), host, host + "p", dead.secondBridge(), router + "a", router + "b"} {
		if _, err := net.InterfaceByName(name); err == nil {
			t.Errorf("link %s survived the sweep", name)
		}
	}
	for _, h := range hiers {
		for _, cg := range []string{host, router} {
			if _, err := os.Stat(filepath.Join(h, cg)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s survived the sweep (%v)", filepath.Join(h, cg), err)
			}
		}
	}
	if _, err := os.Stat(dead.dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived the sweep (%v)", dead.dir(), err)
	}
}

// TestSweepLeavesADirectoryItDidNotMake: a /tmp/sctb<s> without the
// slot's mark is not the testbed's: the sweep reports it and leaves it.
func TestSweepLeavesADirectoryItDidNotMake(t *testing.T) {
	foreign := &slot{index: slotCount - 2}
	if _, err := os.Lstat(foreign.dir()); err == nil {
		t.Fatalf("%s exists already: move it away", foreign.dir())
	}
	file := filepath.Join(foreign.dir(), "notes.txt")
	if err := os.MkdirAll(foreign.dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file); os.Remove(foreign.dir()) })
	if err := os.WriteFile(file, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := foreign.removeDir(); err == nil {
		t.Fatal("removeDir of a directory without the mark succeeded")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "mine" {
		t.Errorf("the foreign file after the sweep: %q, %v", b, err)
	}
	if err := foreign.makeDir(); err == nil {
		t.Error("makeDir over a foreign directory succeeded")
	}
}

// TestSecondSubnetNamesHostsOnce: SecondSubnet lists hosts 1..n, each once.
func TestSecondSubnetNamesHostsOnce(t *testing.T) {
	for _, c := range []struct {
		hosts []int
		ok    bool
	}{{nil, true}, {[]int{3}, true}, {[]int{1, 2, 3}, true}, {[]int{0}, false}, {[]int{4}, false}, {[]int{2, 2}, false}} {
		if err := validateSecondSubnet(c.hosts, 3); (err == nil) != c.ok {
			t.Errorf("SecondSubnet %v of 3 hosts: %v, want ok %v", c.hosts, err, c.ok)
		}
	}
}
