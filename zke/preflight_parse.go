package zke

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// probeFacts is what the preflight script reports about a node.
type probeFacts struct {
	OS, Arch     string
	MemTotalKiB  uint64
	DiskFreeKiB  uint64
	SwapDevices  int
	EpochSeconds int64
	CapBnd       uint64
	Listening    map[int]bool // TCP ports in LISTEN state
	// Kernel are the kernel settings a worker's pods need, by name
	// (kernelSettings), as the node reports them: "1", "0", "missing"
	// (the file or module is not there), or "yes"/"module"/"no" for
	// overlay and vxlan; "yes"/"no" for a flannel device or lease
	// already there.
	Kernel map[string]string
	// VXLANNeeded is not probed: it says that the cluster's pod network
	// (flannel) tunnels over VXLAN, so that the kernel's lack of it is a
	// problem.
	VXLANNeeded bool
	// FlannelNeeded is not probed: it says that the cluster's pod
	// network runs flanneld (either plugin), so that another flannel on
	// a worker is a problem.
	FlannelNeeded bool
	// SharedEndpoint is not probed either: it says that the cluster has a
	// controlPlaneEndpoint, whose haproxy listens on a control-plane
	// node's model.APIEndpointPort.
	SharedEndpoint bool
}

// The kernel settings preflight reads (the @@kernel section).
const (
	kernelIPForward = "ip_forward"
	kernelBridgeNF  = "bridge-nf-call-iptables"
	kernelOverlay   = "overlay"
	kernelVXLAN     = "vxlan"
	// kernelFlannelDevice is "yes" when a flannel VXLAN device
	// (flannel.1, flannel-v6.1) or a flannel lease (/run/flannel/subnet.env,
	// which a host-gw flannel leaves alone) is on the node, "no"
	// otherwise.
	kernelFlannelDevice = "flannel-device"
)

// preflightScript prints the facts preflight checks, one section per
// marker line. It uses only POSIX sh, coreutils or busybox, and /proc.
// dir is the deepest existing directory at or above the node's prefix
// (df needs a path that exists).
func preflightScript(prefix string) string {
	q := shellQuote(prefix)
	return `d=` + q + `; while [ ! -d "$d" ]; do d=$(dirname "$d"); done
echo '@@os'; uname -s; uname -m
echo '@@mem'; grep MemTotal /proc/meminfo
echo '@@disk'; df -Pk "$d" | tail -n 1
echo '@@swap'; tail -n +2 /proc/swaps | wc -l
echo '@@time'; date +%s
echo '@@caps'; grep CapBnd /proc/self/status
echo '@@tcp'; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null
echo '@@kernel'
echo "ip_forward $(cat /proc/sys/net/ipv4/ip_forward 2>/dev/null || echo missing)"
echo "bridge-nf-call-iptables $(cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || echo missing)"
if grep -qw overlay /proc/filesystems 2>/dev/null; then echo 'overlay yes'
elif [ -n "$(find /lib/modules/"$(uname -r)" -name 'overlay.ko*' 2>/dev/null | head -n 1)" ]; then echo 'overlay module'
else echo 'overlay no'; fi
if [ -d /sys/module/vxlan ]; then echo 'vxlan yes'
elif [ -n "$(find /lib/modules/"$(uname -r)" -name 'vxlan.ko*' 2>/dev/null | head -n 1)" ]; then echo 'vxlan module'
else echo 'vxlan no'; fi
if [ -e /sys/class/net/flannel.1 ] || [ -e /sys/class/net/flannel-v6.1 ] || [ -e /run/flannel/subnet.env ]; then echo 'flannel-device yes'; else echo 'flannel-device no'; fi
echo '@@end'`
}

// parsePreflight reads preflightScript's output.
func parsePreflight(out string) (probeFacts, error) {
	f := probeFacts{Listening: map[int]bool{}, Kernel: map[string]string{}}
	section := ""
	var osLines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	seen := map[string]bool{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "@@") {
			section = strings.TrimPrefix(line, "@@")
			seen[section] = true
			continue
		}
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		var err error
		switch section {
		case "os":
			osLines = append(osLines, line)
		case "mem":
			if len(fields) >= 2 {
				f.MemTotalKiB, err = strconv.ParseUint(fields[1], 10, 64)
			}
		case "disk":
			if len(fields) >= 4 {
				f.DiskFreeKiB, err = strconv.ParseUint(fields[3], 10, 64)
			}
		case "swap":
			f.SwapDevices, err = strconv.Atoi(fields[0])
		case "time":
			f.EpochSeconds, err = strconv.ParseInt(fields[0], 10, 64)
		case "caps":
			if len(fields) >= 2 {
				f.CapBnd, err = strconv.ParseUint(fields[1], 16, 64)
			}
		case "kernel":
			if len(fields) == 2 {
				f.Kernel[fields[0]] = fields[1]
			}
		case "tcp":
			// sl local_address rem_address st ...; LISTEN is st 0A.
			if len(fields) >= 4 && fields[3] == "0A" {
				if i := strings.LastIndexByte(fields[1], ':'); i >= 0 {
					if p, perr := strconv.ParseUint(fields[1][i+1:], 16, 16); perr == nil {
						f.Listening[int(p)] = true
					}
				}
			}
		}
		if err != nil {
			return f, fmt.Errorf("read preflight output (%s): %q: %w", section, line, err)
		}
	}
	if !seen["end"] {
		return f, fmt.Errorf("preflight output is incomplete (a command failed on the node?)")
	}
	if len(osLines) >= 2 {
		f.OS, f.Arch = osLines[0], osLines[1]
	}
	return f, nil
}

// capNames are the Linux capabilities by number, as Docker spells them.
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
	"LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
	"CHECKPOINT_RESTORE",
}

// missingCaps lists the capabilities up to the highest one the bounding
// set has that it lacks: Docker's --privileged asks for all of them and
// fails when one is missing.
func missingCaps(bnd uint64) []string {
	highest := -1
	for i := 63; i >= 0; i-- {
		if bnd&(1<<uint(i)) != 0 {
			highest = i
			break
		}
	}
	var out []string
	for i := 0; i <= highest && i < len(capNames); i++ {
		if bnd&(1<<uint(i)) == 0 {
			out = append(out, capNames[i])
		}
	}
	return out
}

// shellQuote quotes s for POSIX sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
