package validation

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Allowlists for values that reach a node: its shell, its file system, a
// config file zke writes, or a command line. Each says what is allowed
// rather than what is not, so that a character nobody thought of is
// refused instead of passed on.
const (
	// maxSSHUserLen bounds a login name (useradd's limit on Linux).
	maxSSHUserLen = 32
	// maxIfaceLen bounds a Linux interface name (IFNAMSIZ - 1).
	maxIfaceLen = 15
	// maxNodePathLen bounds a path on a node (well below PATH_MAX, with
	// room for what zke appends under a prefix).
	maxNodePathLen = 1024
	// maxSocketPathLen bounds a Unix socket path: sun_path holds 108
	// bytes with the terminating NUL.
	maxSocketPathLen = 107
	// maxFlagNameLen bounds the name of an extra kubelet flag; the
	// kubelet's longest is under 50 characters.
	maxFlagNameLen = 100
	// maxFlagValueLen bounds the value of an extra kubelet flag, which
	// is one argument on the kubelet's command line.
	maxFlagValueLen = 4096
	// maxRegistryUserLen bounds a registry user name.
	maxRegistryUserLen = 255
)

// flagNameRE is the form of an extra kubelet flag's name: what the
// kubelet's own flags look like, and nothing a shell or an argument parser
// could read as more than one name.
var flagNameRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// hasControl reports whether s holds a control character (newline, tab,
// NUL, DEL, the C1 range, …) or is not valid UTF-8.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar })
}

// isNodePathRune reports whether r may appear in a path zke uses on a
// node: the POSIX portable file name characters, '/', and '+' and '@',
// which systemd and package managers use. Everything else (white space,
// quotes, '$', '\\', ':', '*', …) is refused: zke writes these paths into
// config files, bind mounts and shell commands, and /proc/mounts would
// spell some of them with escapes.
func isNodePathRune(r rune) bool {
	return isAlnum(r) || strings.ContainsRune("/._-+@", r)
}

// sshUserProblem says why u is not a login name zke can use, or returns ""
// when it is: a POSIX portable user name of 1–32 letters, digits, '.',
// '_' and '-', not starting with '-' and not all digits (which tools read
// as a UID).
func sshUserProblem(u string) string {
	const like = "give a login name like root or zke-admin"
	switch {
	case u == "":
		return "is required: " + like
	case len(u) > maxSSHUserLen:
		return fmt.Sprintf("is %d characters long; a login name has at most %d", len(u), maxSSHUserLen)
	case strings.ContainsFunc(u, func(r rune) bool { return !isAlnum(r) && !strings.ContainsRune("._-", r) }):
		return fmt.Sprintf("%q may contain only letters, digits, '.', '_' and '-'; %s", u, like)
	case u[0] == '-':
		return fmt.Sprintf("%q must not start with '-'; %s", u, like)
	case strings.Trim(u, "0123456789") == "":
		return fmt.Sprintf("%q is all digits, which reads as a user ID; %s", u, like)
	case strings.Trim(u, ".") == "":
		return fmt.Sprintf("%q is not a user name; %s", u, like)
	}
	return ""
}

// ifaceProblem says why s is not a Linux network interface name, or
// returns "" when it is: 1–15 characters, not "." or ".." (the kernel's
// dev_valid_name, which also refuses '/', ':' and white space), and, as an
// allowlist stricter than the kernel's, only letters, digits, '.', '_'
// and '-', so that the name is safe in any command line.
func ifaceProblem(s string) string {
	switch {
	case len(s) > maxIfaceLen:
		return fmt.Sprintf("%q is %d characters long; a Linux interface name has at most %d, like eth0", s, len(s), maxIfaceLen)
	case s == "." || s == "..":
		return fmt.Sprintf("%q is not an interface name; give one like eth0", s)
	case strings.ContainsFunc(s, func(r rune) bool { return !isAlnum(r) && !strings.ContainsRune("._-", r) }):
		return fmt.Sprintf("%q is not a Linux interface name: use only letters, digits, '.', '_' and '-' (no '/', ':', white space or control characters), like eth0", s)
	}
	return ""
}

// flagValueProblem says why v cannot be the value of an extra kubelet
// flag, or returns "" when it can: one line of printable characters of
// sensible length. The value is passed as one argument, never through a
// shell, so quotes and '$' are harmless there.
func flagValueProblem(v string) string {
	switch {
	case len(v) > maxFlagValueLen:
		return fmt.Sprintf("value is %d characters long; use at most %d", len(v), maxFlagValueLen)
	case hasControl(v):
		return "value contains a control character (a newline, tab, …) or invalid UTF-8; give the value on one line"
	}
	return ""
}
