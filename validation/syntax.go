package validation

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Syntax limits from RFC 1123 and Kubernetes' naming rules.
const (
	// maxLabelLen bounds a DNS-1123 label (a cluster or node name, one part
	// of a domain).
	maxLabelLen = 63
	// maxSubdomainLen bounds a DNS-1123 subdomain (the cluster domain).
	maxSubdomainLen = 253
	// minPort and maxPort bound a TCP port.
	minPort, maxPort = 1, 65535
)

// labelProblem says why s is not a DNS-1123 label, or returns "" when it is:
// 1–63 lower-case letters, digits and '-', starting and ending with a
// letter or digit.
func labelProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > maxLabelLen:
		return fmt.Sprintf("%q is %d characters long; use at most %d", s, len(s), maxLabelLen)
	}
	for _, r := range s {
		if !isLowerAlnum(r) && r != '-' {
			if r >= 'A' && r <= 'Z' {
				return fmt.Sprintf("%q must be lower case", s)
			}
			return fmt.Sprintf("%q may contain only lower-case letters, digits and '-'", s)
		}
	}
	if s[0] == '-' || s[len(s)-1] == '-' {
		return fmt.Sprintf("%q must start and end with a letter or digit", s)
	}
	return ""
}

// subdomainProblem says why s is not a DNS-1123 subdomain (labels joined
// by dots, at most 253 characters), or returns "" when it is.
func subdomainProblem(s string) string {
	if len(s) > maxSubdomainLen {
		return fmt.Sprintf("%q is %d characters long; use at most %d", s, len(s), maxSubdomainLen)
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" {
			return fmt.Sprintf("%q has an empty label; write it like cluster.local, without leading, trailing or double dots", s)
		}
		if p := labelProblem(label); p != "" {
			return fmt.Sprintf("%q is not a valid domain: label %s", s, p)
		}
	}
	return ""
}

func isLowerAlnum(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')
}

// parseIP parses a literal IPv4 or IPv6 address without a zone and returns
// it in canonical form (IPv4-mapped IPv6 unmapped), so that two spellings
// of one address compare equal.
func parseIP(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// sameAddress reports whether a and b name the same host: equal IPs when
// both parse, equal text otherwise.
func sameAddress(a, b string) bool {
	ia, okA := parseIP(a)
	ib, okB := parseIP(b)
	if okA && okB {
		return ia == ib
	}
	return a == b
}

// portProblem says why p is not a TCP port, or returns "" when it is.
func portProblem(p int) string {
	if p < minPort || p > maxPort {
		return fmt.Sprintf("%d is out of range; use a port between %d and %d", p, minPort, maxPort)
	}
	return ""
}

// splitHostPortIP splits an "ip:port" address. It returns the host IP, or a
// reason why addr is not of that form.
func splitHostPortIP(addr string) (netip.Addr, string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.Addr{}, fmt.Sprintf("%q is not of the form ip:port (like 10.0.0.9:8088, or [fd00::9]:8088 for IPv6)", addr)
	}
	ip, ok := parseIP(host)
	if !ok {
		return netip.Addr{}, fmt.Sprintf("host %q is not an IP address; give the IP the nodes use to reach singlecloud", host)
	}
	if ip.IsUnspecified() {
		return netip.Addr{}, fmt.Sprintf("host %s is the unspecified address; give the IP the nodes use to reach singlecloud", ip)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return netip.Addr{}, fmt.Sprintf("port %q is not a number; use a port between %d and %d", port, minPort, maxPort)
	}
	if p := portProblem(n); p != "" {
		return netip.Addr{}, "port " + p
	}
	return ip, ""
}

// parseCIDR parses a network like 10.42.0.0/16. It returns a reason when s
// is not a CIDR or has host bits set.
func parseCIDR(s string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Sprintf("%q is not a CIDR; write it like 10.42.0.0/16", s)
	}
	p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits())
	if !p.IsValid() {
		return netip.Prefix{}, fmt.Sprintf("%q is not a CIDR; write it like 10.42.0.0/16", s)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Sprintf("%q has host bits set; did you mean %s?", s, m)
	}
	return p, ""
}

// versionProblem says why v is not a Kubernetes release like v1.36.3, or
// returns "" when it is.
func versionProblem(v string) string {
	bad := fmt.Sprintf("%q is not a Kubernetes release; write it like v1.36.3 (vMAJOR.MINOR.PATCH)", v)
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return bad
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return bad
	}
	for _, p := range parts {
		if p == "" || len(p) > 1 && p[0] == '0' {
			return bad
		}
		for _, r := range p {
			if r < '0' || r > '9' {
				return bad
			}
		}
	}
	return ""
}
