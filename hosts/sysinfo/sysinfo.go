// Package sysinfo collects a Linux host's system information (OS, kernel,
// CPUs, memory, disks, container runtimes and clock skew) for singlecloud's
// host manager.
//
// The host manager runs the fixed, read-only shell Script over SSH and hands
// its output to Parse. The script is a constant so that nothing user supplied
// is ever executed on a host. Its output is split into "@@name" sections so a
// missing or broken tool only empties its own section. Parse treats the output
// as untrusted input from a remote machine: it never fails, bounds what it
// keeps and reports unreadable sections as warnings instead.
package sysinfo

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Script is the POSIX sh script run on the host. It works with GNU coreutils
// and busybox, only reads, always exits 0 and prints a "@@name" line before
// each section. Commands that may hang (df on a stale network mount, the
// container runtimes) run under "timeout 5" when that form works (old busybox
// only knows "timeout -t 5").
const Script = `_t=
if timeout 5 true >/dev/null 2>&1; then _t='timeout 5'; fi
_run() { $_t "$@"; }
echo @@os
grep '^PRETTY_NAME=' /etc/os-release 2>/dev/null || grep '^PRETTY_NAME=' /usr/lib/os-release 2>/dev/null
echo @@kernel
uname -r 2>/dev/null
echo @@arch
uname -m 2>/dev/null
echo @@cpus
nproc 2>/dev/null || grep -c '^processor' /proc/cpuinfo 2>/dev/null
echo @@meminfo
grep -E '^(MemTotal|SwapTotal|SwapFree):' /proc/meminfo 2>/dev/null
echo @@df
_o=$(_run df -PkT 2>/dev/null)
case "$_o" in *Type*) ;; *) _o=$(_run df -Pk 2>/dev/null) ;; esac
printf '%s\n' "$_o"
echo @@docker
if command -v docker >/dev/null 2>&1; then _run docker version --format '{{.Server.Version}}' 2>/dev/null; fi
echo @@containerd
if command -v containerd >/dev/null 2>&1; then _run containerd --version 2>/dev/null; fi
echo @@runc
if command -v runc >/dev/null 2>&1; then _run runc --version 2>/dev/null; fi
echo @@clock
date +%s.%N 2>/dev/null
echo @@end
exit 0
`

// Bounds applied by Parse to output coming from a remote machine.
const (
	MaxOutputBytes = 1 << 20 // bytes of script output examined
	MaxDisks       = 64      // disks kept
	MaxStringBytes = 256     // bytes kept of any string
)

// Info is the system information of one host as shown in the API.
type Info struct {
	OS               string    `json:"os"`
	Kernel           string    `json:"kernel"`
	Arch             string    `json:"arch"`
	CPUs             int       `json:"cpus"`
	MemoryBytes      int64     `json:"memoryBytes"`
	SwapBytes        int64     `json:"swapBytes"`
	SwapFreeBytes    int64     `json:"swapFreeBytes"`
	Disks            []Disk    `json:"disks"`
	Runtimes         []Runtime `json:"runtimes"`
	ClockSkewSeconds float64   `json:"clockSkewSeconds"` // host clock minus ours; positive when the host is ahead
	CollectedAt      time.Time `json:"collectedAt"`
	Warnings         []string  `json:"warnings,omitempty"`
}

// Disk is one real (non-pseudo) mounted filesystem.
type Disk struct {
	Mount          string `json:"mount"`
	SizeBytes      int64  `json:"sizeBytes"`
	AvailableBytes int64  `json:"availableBytes"`
}

// Runtime is an installed container runtime; Name is "docker", "containerd"
// or "runc" and Version only the version number, e.g. "1.7.24".
type Runtime struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Parse turns the output of Script into an Info. sent and received are our
// clock just before running the script and just after reading its output;
// the clock skew is measured against their midpoint. Parse never fails: each
// section it cannot read leaves its fields zero and adds a warning.
func Parse(out []byte, sent, received time.Time) Info {
	info := Info{CollectedAt: received.UTC()}
	warn := func(format string, args ...any) {
		info.Warnings = append(info.Warnings, fmt.Sprintf(format, args...))
	}
	if len(out) > MaxOutputBytes {
		out = out[:MaxOutputBytes]
		warn("output: truncated to %d bytes", MaxOutputBytes)
	}
	sec := splitSections(out)
	first := func(name string) string {
		if lines := sec[name]; len(lines) > 0 {
			return lines[0]
		}
		return ""
	}

	v := strings.TrimPrefix(first("os"), "PRETTY_NAME=")
	if info.OS = capString(strings.Trim(v, `"'`)); info.OS == "" {
		warn("os: no PRETTY_NAME in /etc/os-release")
	}
	if info.Kernel = capString(first("kernel")); info.Kernel == "" {
		warn("kernel: no uname -r output")
	}
	if info.Arch = capString(first("arch")); info.Arch == "" {
		warn("arch: no uname -m output")
	}
	if v = first("cpus"); v == "" {
		warn("cpus: no CPU count")
	} else if n, err := strconv.Atoi(v); err != nil || n <= 0 {
		warn("cpus: bad CPU count %q", capString(v))
	} else {
		info.CPUs = n
	}
	parseMeminfo(sec["meminfo"], &info, warn)
	parseDisks(sec["df"], &info, warn)
	for _, name := range []string{"docker", "containerd", "runc"} {
		if v = first(name); v == "" {
			continue // not installed, or not answering: nothing to show
		}
		if ver := versionOf(v); ver != "" {
			info.Runtimes = append(info.Runtimes, Runtime{Name: name, Version: ver})
		} else {
			warn("%s: no version in %q", name, capString(v))
		}
	}
	if v = first("clock"); v == "" {
		warn("clock: no date output")
	} else if host, ok := parseUnixTime(v); !ok {
		warn("clock: bad date output %q", capString(v))
	} else if sent.IsZero() || received.IsZero() {
		warn("clock: send or receive time unknown")
	} else {
		mid := sent.Add(received.Sub(sent) / 2)
		info.ClockSkewSeconds = host.Sub(mid).Seconds()
	}
	return info
}

// splitSections maps each "@@name" section to its non-empty, trimmed lines.
// A repeated section keeps its first occurrence.
func splitSections(out []byte) map[string][]string {
	sec := map[string][]string{}
	var cur string
	for _, raw := range bytes.Split(out, []byte("\n")) {
		line := strings.TrimSpace(string(raw))
		if name, ok := strings.CutPrefix(line, "@@"); ok {
			cur = ""
			if _, dup := sec[name]; !dup {
				sec[name], cur = nil, name
			}
			continue
		}
		if cur != "" && line != "" {
			sec[cur] = append(sec[cur], line)
		}
	}
	return sec
}

func parseMeminfo(lines []string, info *Info, warn func(string, ...any)) {
	fields := map[string]*int64{
		"MemTotal": &info.MemoryBytes, "SwapTotal": &info.SwapBytes, "SwapFree": &info.SwapFreeBytes,
	}
	found := map[string]bool{}
	for _, line := range lines {
		key, rest, ok := strings.Cut(line, ":")
		dst := fields[key]
		if !ok || dst == nil || found[key] {
			continue
		}
		found[key] = true
		f := strings.Fields(rest)
		if n, ok := scaled(f, 1024); ok && len(f) == 2 && f[1] == "kB" {
			*dst = n
		} else {
			warn("memory: bad %s in /proc/meminfo", key)
		}
	}
	if !found["MemTotal"] {
		warn("memory: no MemTotal in /proc/meminfo")
	}
	if !found["SwapTotal"] || !found["SwapFree"] {
		warn("memory: no SwapTotal/SwapFree in /proc/meminfo")
	}
}

// scaled parses f[0] as a non-negative count of mult-byte units.
func scaled(f []string, mult int64) (int64, bool) {
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}

// isPseudo reports whether fs, a filesystem type (or, without df -T, a
// source name), is not a disk.
func isPseudo(fs string) bool {
	switch fs {
	case "tmpfs", "devtmpfs", "overlay", "proc", "sysfs", "squashfs", "devpts", "shm",
		"ramfs", "mqueue", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
		"hugetlbfs", "configfs", "fusectl", "nsfs", "autofs", "efivarfs", "binfmt_misc":
		return true
	}
	return strings.HasPrefix(fs, "cgroup")
}

// parseDisks reads POSIX df -k output, with or without the Type column.
// Without it the filesystem source name is checked instead, which catches
// the usual tmpfs/overlay/shm mounts. Zero-sized and repeated mounts are
// dropped.
func parseDisks(lines []string, info *Info, warn func(string, ...any)) {
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Filesystem") {
		warn("disks: no df output")
		return
	}
	off := 0 // 1 when the Type column is present
	if hdr := strings.Fields(lines[0]); len(hdr) > 1 && hdr[1] == "Type" {
		off = 1
	}
	seen := map[string]bool{}
	bad, dropped := 0, 0
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 6+off {
			bad++
			continue
		}
		size, ok1 := scaled(f[1+off:], 1024)
		avail, ok2 := scaled(f[3+off:], 1024)
		mount := capString(strings.Join(f[5+off:], " "))
		if !ok1 || !ok2 || !strings.HasPrefix(mount, "/") {
			bad++
			continue
		}
		if isPseudo(f[off]) || size == 0 || seen[mount] {
			continue
		}
		seen[mount] = true
		if len(info.Disks) >= MaxDisks {
			dropped++
			continue
		}
		info.Disks = append(info.Disks, Disk{Mount: mount, SizeBytes: size, AvailableBytes: avail})
	}
	if bad > 0 {
		warn("disks: skipped %d unreadable df lines", bad)
	}
	if dropped > 0 {
		warn("disks: kept %d, dropped %d", MaxDisks, dropped)
	}
}

// versionOf returns the first dotted version number in a tool's output, e.g.
// "1.7.24" from "containerd github.com/containerd/containerd v1.7.24 88bb0e",
// dropping any suffix such as "+dfsg1" or "-ce".
func versionOf(s string) string {
	for _, tok := range strings.Fields(s) {
		tok = strings.TrimPrefix(tok, "v")
		end := 0
		for end < len(tok) && (tok[end] >= '0' && tok[end] <= '9' || tok[end] == '.' && end > 0 && tok[end-1] != '.') {
			end++
		}
		v := strings.TrimSuffix(tok[:end], ".")
		if strings.Contains(v, ".") && (end == len(tok) || strings.ContainsRune("-+~", rune(tok[end]))) {
			return capString(v)
		}
	}
	return ""
}

// parseUnixTime parses "seconds.nanoseconds". A fractional part that is not
// digits (busybox printing a literal "%N") falls back to whole seconds.
func parseUnixTime(s string) (time.Time, bool) {
	secs, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false
	}
	var nsec int64
	if frac = frac[:min(len(frac), 9)]; frac != "" && strings.Trim(frac, "0123456789") == "" {
		nsec, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Unix(n, nsec), true
}

// capString trims s and cuts it to at most MaxStringBytes without splitting
// a UTF-8 character.
func capString(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxStringBytes {
		return s
	}
	cut := MaxStringBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
