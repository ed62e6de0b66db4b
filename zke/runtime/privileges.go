package runtime

import (
	"slices"
	"strconv"
	"strings"
)

// capabilityNames returns the Linux capabilities by number
// (linux/capability.h), as Docker names them.
func capabilityNames() []string {
	return []string{
		"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
		"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
		"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
		"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
		"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF",
		"CHECKPOINT_RESTORE",
	}
}

// MissingCapabilities lists the capabilities numbered up to lastCap that
// are absent from a bounding set (the CapBnd mask of /proc/self/status on
// the node), by the names Docker uses. lastCap is the highest capability
// both the kernel (/proc/sys/kernel/cap_last_cap) and the engine
// (Info.LastCapability) know: Docker rejects names it does not know, and
// its "ALL" does not include them anyway.
func MissingCapabilities(capBnd uint64, lastCap int) []string {
	var missing []string
	for i, name := range capabilityNames() {
		if i > lastCap {
			break
		}
		if capBnd&(1<<uint(i)) == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

// WithAllPrivileges returns a copy of s with every privilege the node
// allows, as Kubernetes' node components need. missing are the capabilities
// absent from the node's bounding set (see MissingCapabilities). With none
// missing it sets Privileged. Otherwise Docker's --privileged would fail
// (runc cannot grant a capability outside the bounding set), so it builds
// the equivalent: every capability but the missing ones, unconfined
// seccomp, AppArmor and /proc and /sys paths, and access to every device
// ("a *:* rwm"). Unlike --privileged this does not populate /dev: bind
// /dev if the component needs the node's devices.
func (s ContainerSpec) WithAllPrivileges(missing []string) ContainerSpec {
	if len(missing) == 0 {
		s.Privileged = true
		return s
	}
	s.Privileged = false
	s.CapAdd = append(slices.Clone(s.CapAdd), "ALL")
	s.CapDrop = append(slices.Clone(s.CapDrop), missing...)
	s.SecurityOpt = append(slices.Clone(s.SecurityOpt), "seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined")
	s.DeviceCgroupRules = append(slices.Clone(s.DeviceCgroupRules), "a *:* rwm")
	return s
}

// Capability numbers for Info.LastCapability.
const (
	// capAuditRead is the last capability Docker 20.10 knows.
	capAuditRead = 37
	// capCheckpointRestore is the last capability Docker 23 and later know.
	capCheckpointRestore = 40
)

// LastCapability is the highest capability number the engine knows:
// Docker 20.10 stops at AUDIT_READ (37), Docker 23 added PERFMON, BPF and
// CHECKPOINT_RESTORE (40). Pass the smaller of it and the kernel's
// cap_last_cap to MissingCapabilities.
func (i Info) LastCapability() int {
	major, _, _ := strings.Cut(i.Version, ".")
	if n, err := strconv.Atoi(major); err == nil && n >= 23 {
		return capCheckpointRestore
	}
	return capAuditRead
}
