package testbed

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// slotCount is how many StartHosts calls can run at once on one machine,
// across all test binaries: slot s owns subnets 10.250.s.0/24 and
// 10.251.s.0/24.
const slotCount = 250

// ipTimeout bounds one ip or iptables command.
const ipTimeout = 30 * time.Second

// slot is an exclusive claim on two subnets and on every name derived from
// its index (bridges sctb<s> and sctb<s>b, links and cgroups sctb<s>h<i>,
// the router's cgroup sctb<s>hr and links sctb<s>hra and sctb<s>hrb,
// directory /tmp/sctb<s>). The claim is an abstract unix socket, which the kernel
// releases when the process dies, so a crashed test binary never holds a
// slot and leaves no lock file behind.
type slot struct {
	index int
	lock  net.Listener
}

// acquireSlot claims the lowest free slot.
func acquireSlot() (*slot, error) {
	for i := range slotCount {
		s, err := claimSlot(i)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		return s, err
	}
	return nil, fmt.Errorf("all %d testbed slots are in use: too many StartHosts at once", slotCount)
}

// claimSlot claims slot i; it fails with EADDRINUSE when a live process
// holds it.
func claimSlot(i int) (*slot, error) {
	l, err := net.Listen("unix", fmt.Sprintf("@singlecloud-testbed-slot-%d", i))
	if err != nil {
		return nil, fmt.Errorf("claim testbed slot %d: %w", i, err)
	}
	return &slot{index: i, lock: l}, nil
}

// sweepStale sweeps every slot other than skip that has leftovers and that
// no live process holds: what test binaries killed mid-test left behind.
func sweepStale(hiers []string, skip int) error {
	// The names a slot's resources carry: bridges sctb<s> and sctb<s>b,
	// links and cgroups sctb<s>h<i> (and the anchor's peer sctb<s>h0p),
	// the router's cgroup sctb<s>hr and links sctb<s>hr{a,b}, directory
	// /tmp/sctb<s>.
	slotName := regexp.MustCompile(`^sctb([0-9]+)(b|h[0-9]+p?|hr[ab]?)?$`)
	found := map[int]bool{}
	note := func(name string) {
		if m := slotName.FindStringSubmatch(name); m != nil {
			if i, err := strconv.Atoi(m[1]); err == nil && i != skip && i < slotCount {
				found[i] = true
			}
		}
	}
	for _, dir := range append([]string{"/tmp"}, hiers...) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			note(e.Name())
		}
	}
	ifaces, _ := net.Interfaces()
	for _, ifc := range ifaces {
		note(ifc.Name)
	}
	var errs []error
	for i := range found {
		s, err := claimSlot(i)
		if err != nil {
			continue // held by a live test binary
		}
		errs = append(errs, s.sweep(hiers))
		s.release()
	}
	return errors.Join(errs...)
}

func (s *slot) release() { s.lock.Close() }

func (s *slot) bridge() string { return fmt.Sprintf("sctb%d", s.index) }

// hostPrefix starts the link and cgroup names of the slot's hosts.
func (s *slot) hostPrefix() string { return fmt.Sprintf("sctb%dh", s.index) }

func (s *slot) dir() string { return fmt.Sprintf("/tmp/sctb%d", s.index) }

// sweep removes whatever the slot's names hold, in order: processes in the
// slot's cgroups (the router's too), the cgroups, the links (both bridges),
// the forwarding rules and the directory. It is the last step of a normal cleanup and the first of a
// slot claim, where it removes what a test binary that died left behind.
func (s *slot) sweep(hiers []string) error {
	var errs []error
	var cgroups []string
	for _, h := range hiers {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), s.hostPrefix()) && !slices.Contains(cgroups, e.Name()) {
				cgroups = append(cgroups, e.Name())
			}
		}
	}
	for _, cg := range cgroups {
		if err := killCgroup(hiers, "/"+cg); err != nil {
			errs = append(errs, err)
		}
	}
	for _, cg := range cgroups {
		if err := removeCgroup(hiers, "/"+cg); err != nil {
			errs = append(errs, err)
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		errs = append(errs, fmt.Errorf("list links: %w", err))
	}
	for _, ifc := range ifaces {
		if ifc.Name == s.bridge() || ifc.Name == s.secondBridge() || strings.HasPrefix(ifc.Name, s.hostPrefix()) {
			// Deleting one end of a veth deletes its peer too.
			if err := ipCommand("link del " + ifc.Name + "\n"); err != nil && linkExists(ifc.Name) {
				errs = append(errs, err)
			}
		}
	}
	for _, br := range []string{s.bridge(), s.secondBridge()} {
		if err := removeForwardRule(br); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.removeDir(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// slotMark is the file a slot's directory holds from the moment the slot
// made it: the sweep removes /tmp/sctb<s> only with it, never a directory
// of that name that something else made.
const slotMark = ".singlecloud-testbed-slot"

// makeDir creates the slot's directory (which the sweep has emptied) and
// marks it as the testbed's.
func (s *slot) makeDir() error {
	if err := os.Mkdir(s.dir(), 0o755); err != nil {
		return fmt.Errorf("create %s: %w (a directory of that name that the testbed did not make: move it away)", s.dir(), err)
	}
	if err := os.WriteFile(filepath.Join(s.dir(), slotMark), nil, 0o644); err != nil {
		return fmt.Errorf("mark %s: %w", s.dir(), err)
	}
	return nil
}

// removeDir removes the slot's directory if the testbed made it (it holds
// slotMark); a missing directory is not an error, and one without the mark
// is left and reported.
func (s *slot) removeDir() error {
	if _, err := os.Lstat(s.dir()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(s.dir(), slotMark)); err != nil {
		return fmt.Errorf("%s was not made by the testbed (no %s in it): it was left; move it away: %w", s.dir(), slotMark, err)
	}
	return removeTree(s.dir())
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// ipCommand runs ip -batch in the test's network namespace.
func ipCommand(batch string) error {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(batch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip %q: %w: %s", strings.TrimSpace(batch), err, out)
	}
	return nil
}

// removeTree deletes dir after detaching anything mounted under it in the
// test's mount namespace (normally nothing: a host's mounts live in the
// host's own namespace).
func removeTree(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmount %s: %w", m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("list mounts: %w", err)
	}
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	sort.Slice(found, func(i, j int) bool { return len(found[i]) > len(found[j]) })
	return found, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return filepath.Clean(b.String())
}
