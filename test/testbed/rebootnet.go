package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// bootRulePriorities are the policy routing rules a network namespace
// starts with (local, main and, for IPv4, default).
func bootRulePriorities() []int { return []int{0, 32766, 32767} }

// resetNetwork gives the host's network namespace back what it had at
// start, as a reboot would: links, addresses, routes and rules (only lo
// and eth0 with the testbed's address and routes are left, plus the
// fallback tunnels the kernel puts in every namespace), iptables (see
// iptablesResetScript) and sysctls (see resetSysctls). The neighbour cache
// is flushed. Connection tracking entries, IPVS services and nftables
// tables that are not iptables' are not reset.
func (h *Host) resetNetwork(ctx context.Context) error {
	fresh, err := readFreshNetns()
	if err != nil {
		return err
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := h.ipJSON(ctx, &links, "link", "show"); err != nil {
		return err
	}
	var batch strings.Builder
	for _, l := range links {
		if l.Name != "lo" && l.Name != "eth0" && !fresh.links[l.Name] {
			fmt.Fprintf(&batch, "link del %s\n", l.Name)
		}
	}
	// A peer's deletion takes its veth with it: errors are checked by
	// listing what is left.
	h.ipBatch(ctx, "", batch.String(), true)
	for _, family := range []string{"-4", "-6"} {
		var rules []struct {
			Priority int `json:"priority"`
		}
		if err := h.ipJSON(ctx, &rules, family, "rule", "show"); err != nil {
			return err
		}
		batch.Reset()
		for _, r := range rules {
			if !slices.Contains(bootRulePriorities(), r.Priority) {
				fmt.Fprintf(&batch, "rule del priority %d\n", r.Priority)
			}
		}
		h.ipBatch(ctx, family, batch.String(), true)
	}
	if err := h.ipJSON(ctx, &links, "link", "show"); err != nil {
		return err
	}
	for _, l := range links {
		if l.Name != "lo" && l.Name != "eth0" && !fresh.links[l.Name] {
			return fmt.Errorf("link %s cannot be deleted", l.Name)
		}
	}
	if err := h.resetRoutes(ctx); err != nil {
		return err
	}
	if out, err := h.Run(ctx, iptablesResetScript); err != nil {
		return fmt.Errorf("reset iptables: %w: %s", err, out)
	}
	return h.resetSysctls(fresh)
}

// resetRoutes deletes every route the kernel did not make for an address,
// lo's extra addresses and all of eth0's but its IPv6 link-local one, then
// configures eth0 as at start, which brings back its address, default
// route and routes to the other subnet.
func (h *Host) resetRoutes(ctx context.Context) error {
	for _, family := range []string{"-4", "-6"} {
		var batch strings.Builder
		var routes []struct {
			Type, Dst, Table, Protocol string
			Metric                     *int
		}
		if err := h.ipJSON(ctx, &routes, family, "route", "show", "table", "all"); err != nil {
			return err
		}
		for _, r := range routes {
			if r.Protocol == "kernel" {
				continue
			}
			fmt.Fprintf(&batch, "route del %s %s", r.Type, r.Dst)
			if r.Table != "" {
				fmt.Fprintf(&batch, " table %s", r.Table)
			}
			if r.Metric != nil {
				fmt.Fprintf(&batch, " metric %d", *r.Metric)
			}
			batch.WriteString("\n")
		}
		h.ipBatch(ctx, family, batch.String(), true)
	}
	h.ipBatch(ctx, "-6", "addr flush dev eth0 scope global\naddr flush dev lo scope global\n", true)
	out, err := h.ipBatch(ctx, "-4", "addr flush dev eth0\naddr flush dev lo scope global\nneigh flush all\n"+h.boot.g.eth0Config(h), false)
	if err != nil {
		return fmt.Errorf("configure eth0: %w: %s", err, out)
	}
	return nil
}

// ipJSON runs ip -j inside the host and decodes its output into v.
func (h *Host) ipJSON(ctx context.Context, v any, args ...string) error {
	out, err := h.Command(ctx, "ip", append([]string{"-j"}, args...)...).Output()
	if err != nil {
		return fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// ipBatch runs ip -batch inside the host, for family (-4, -6 or ""); with
// force it goes on past failing commands and never fails: the caller
// checks the outcome.
func (h *Host) ipBatch(ctx context.Context, family, batch string, force bool) (string, error) {
	if batch == "" {
		return "", nil
	}
	args := []string{"-batch", "-"}
	if force {
		args = append([]string{"-force"}, args...)
	}
	if family != "" {
		args = append([]string{family}, args...)
	}
	cmd := h.Command(ctx, "ip", args...)
	cmd.Stdin = strings.NewReader(batch)
	out, err := cmd.CombinedOutput()
	if force {
		return string(out), nil
	}
	return string(out), err
}

// iptablesResetScript empties every table each iptables variant (legacy
// and nft, IPv4 and IPv6) has in the host: a restore of each listed table
// with only its built-in chains, policy ACCEPT, flushes them and deletes
// the other chains, leaving what a namespace starts with. Tables that were
// never used are not listed, so no module is loaded for them.
const iptablesResetScript = `set -e
for v in iptables-legacy ip6tables-legacy iptables-nft ip6tables-nft; do
	command -v $v-save >/dev/null 2>&1 || continue
	rules=$($v-save 2>/dev/null) || continue
	printf '%s\n' "$rules" | awk '/^\*/ || /^COMMIT/ { print } /^:/ && $2 != "-" { print $1 " ACCEPT [0:0]" }' | $v-restore
done
`

// netnsState is what a new network namespace has: its links (lo and the
// fallback tunnels of loaded modules) and its sysctls, by path under
// /proc/sys/net.
type netnsState struct {
	links   map[string]bool
	sysctls map[string]string
}

// readFreshNetns reads what a new network namespace, created as the
// testbed creates a host's, has: what a host's namespace has at boot.
// Sysctls that differ between two new namespaces (random keys) are left
// out.
func readFreshNetns() (*netnsState, error) {
	var states [2]*netnsState
	for i := range states {
		var err error
		states[i], err = inNetns(-1, readNetns)
		if err != nil {
			return nil, err
		}
	}
	for k, v := range states[0].sysctls {
		if states[1].sysctls[k] != v {
			delete(states[0].sysctls, k)
		}
	}
	return states[0], nil
}

// resetSysctls writes back, in the host's network namespace, every sysctl
// that differs from a new namespace's. A device's settings (conf/<dev>,
// neigh/<dev>) are compared with a new namespace's defaults, which eth0
// got when it was moved in at start.
func (h *Host) resetSysctls(fresh *netnsState) error {
	fd, err := unix.Open(filepath.Join("/proc", strconv.Itoa(h.holder.pid()), "ns", "net"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open network namespace: %w", err)
	}
	defer unix.Close(fd)
	_, err = inNetns(fd, func() (*netnsState, error) {
		cur, err := readNetns()
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(cur.sysctls))
		for k := range cur.sysctls {
			keys = append(keys, k)
		}
		slices.Sort(keys) // conf/all (which sets every device) before a device's
		var errs []error
		for _, k := range keys {
			want, ok := fresh.sysctls[freshKey(k, fresh)]
			if !ok || cur.sysctls[k] == want {
				continue
			}
			if err := os.WriteFile(filepath.Join("/proc/sys/net", k), []byte(want), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("reset sysctl %s from %q to %q: %w", k, cur.sysctls[k], want, err))
			}
		}
		return nil, errors.Join(errs...)
	})
	return err
}

// freshKey is the path in a new namespace whose value key should have.
func freshKey(key string, fresh *netnsState) string {
	parts := strings.Split(key, "/")
	if len(parts) > 3 && (parts[1] == "conf" || parts[1] == "neigh") && parts[2] != "all" && parts[2] != "default" && !fresh.links[parts[2]] {
		parts[2] = "default"
	}
	return strings.Join(parts, "/")
}

// inNetns runs f on a locked thread in the network namespace fd, or in a
// new one when fd is -1, then puts the thread back in the namespace it
// came from and unlocks it. The thread must not end: the testbed's
// daemons are started with Pdeathsig, which the kernel sends when the
// thread that started a process exits, so a thread that ended locked
// would kill whatever it had started (other hosts' sshd and dockerd). Only
// when the way back fails does the thread stay locked and end.
func inNetns(fd int, f func() (*netnsState, error)) (*netnsState, error) {
	type result struct {
		s   *netnsState
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open the thread's network namespace: %w", err)}
			return
		}
		defer unix.Close(orig)
		if fd < 0 {
			err = unix.Unshare(unix.CLONE_NEWNET)
		} else {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
		}
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("enter network namespace: %w", err)}
			return
		}
		s, err := f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{s, err}
	}()
	r := <-ch
	return r.s, r.err
}

// readNetns reads the links and the readable, writable sysctls of the
// calling thread's network namespace.
func readNetns() (*netnsState, error) {
	s := &netnsState{links: map[string]bool{}, sysctls: map[string]string{}}
	dev, err := os.ReadFile("/proc/thread-self/net/dev")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(dev), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			s.links[strings.TrimSpace(name)] = true
		}
	}
	root := "/proc/sys/net"
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Mode().Perm()&0o600 != 0o600 {
			return nil
		}
		v, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		s.sysctls[strings.TrimPrefix(path, root+"/")] = strings.TrimSpace(string(v))
		return nil
	})
	return s, err
}
