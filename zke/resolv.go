package zke

import (
	"bufio"
	"fmt"
	"net/netip"
	"strings"
)

// The resolv.conf files zke reads on a worker. A host running
// systemd-resolved points /etc/resolv.conf at its stub (127.0.0.53),
// which a pod cannot reach, and keeps the real upstreams in
// systemdResolvConf; kubeadm gives the kubelet that file, and so does zke.
const (
	etcResolvConf     = "/etc/resolv.conf"
	systemdResolvConf = "/run/systemd/resolve/resolv.conf"
	// systemdResolvDir is what the kubelet container gets of
	// systemdResolvConf: its directory, read-only. systemd-resolved
	// replaces the file by a rename, which a bind of the file itself
	// would not see.
	systemdResolvDir = "/run/systemd/resolve"
)

// maxResolvBytes bounds what is read of each resolv.conf: glibc uses the
// first three nameservers, and a file larger than this is not one.
const maxResolvBytes = 64 << 10

// maxForwardUpstreams is the most upstreams CoreDNS's forward plugin
// accepts in one forward block.
const maxForwardUpstreams = 15

// resolvMarker starts each file's section in resolvScript's output; a
// resolv.conf treats the line as a comment.
const resolvMarker = "#zke-resolv "

// nodeDNS is how a worker resolves names, as preflight found it.
type nodeDNS struct {
	// resolvConf is the file the kubelet reads as the node's resolver
	// configuration (resolvConf of its KubeletConfiguration).
	resolvConf string
	// upstreams are the nameservers of resolvConf that a pod can use
	// (not loopback), as CoreDNS forwards to them.
	upstreams []string
	// problem, when not "", says why no pod on the node could resolve
	// a name outside the cluster, and what to do.
	problem string
}

// resolvFile is what zke reads of one resolv.conf.
type resolvFile struct {
	found       bool
	nameservers []netip.Addr
}

// resolvScript prints each resolv.conf zke reads after a marker line
// saying whether it exists, at most maxResolvBytes of each.
func resolvScript() string {
	var s strings.Builder
	for _, p := range []string{etcResolvConf, systemdResolvConf} {
		q := shellQuote(p)
		fmt.Fprintf(&s, "if [ -f %s ]; then echo %s; head -c %d %s; echo; else echo %s; fi\n",
			q, shellQuote(resolvMarker+p+" present"), maxResolvBytes, q, shellQuote(resolvMarker+p+" missing"))
	}
	return s.String()
}

// parseResolvOutput splits resolvScript's output into its files, by path.
// A file whose marker is absent counts as missing.
func parseResolvOutput(out string) map[string]resolvFile {
	files := map[string]resolvFile{}
	var cur string
	var text strings.Builder
	flush := func() {
		if cur != "" {
			f := parseResolvConf(text.String())
			f.found = true
			files[cur] = f
		}
		cur = ""
		text.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 4096), 2*maxResolvBytes)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, resolvMarker); ok {
			flush()
			if p, ok := strings.CutSuffix(rest, " present"); ok {
				cur = p
			}
			continue
		}
		text.WriteString(line + "\n")
	}
	flush()
	return files
}

// parseResolvConf reads the nameservers of a resolv.conf as glibc does:
// lines "nameserver ADDR", comments from '#' or ';', other keywords
// (search, options, domain) skipped, a value that is not an IP address
// skipped.
func parseResolvConf(text string) resolvFile {
	var f resolvFile
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(fields[1]); err == nil {
			f.nameservers = append(f.nameservers, a)
		}
	}
	return f
}

// usable are the nameservers of f that a pod can reach: not loopback
// (127.0.0.0/8, ::1, which in a pod is the pod itself), and not an
// IPv6 address bound to one of the host's interfaces by a zone.
func (f resolvFile) usable() []string {
	var out []string
	for _, a := range f.nameservers {
		a = a.Unmap()
		if a.IsLoopback() || a.Zone() != "" || a.IsUnspecified() {
			continue
		}
		out = append(out, a.String())
	}
	return out
}

// describe names f's nameservers for a message.
func (f resolvFile) describe() string {
	if len(f.nameservers) == 0 {
		return "no nameserver (the resolver then asks 127.0.0.1)"
	}
	s := make([]string, len(f.nameservers))
	for i, a := range f.nameservers {
		s[i] = a.String()
	}
	return "only " + strings.Join(s, ", ")
}

// decideDNS picks the file the kubelet of node name reads, as kubeadm
// does: /etc/resolv.conf, unless it names no nameserver a pod can use
// and systemd-resolved's own file exists. files are parseResolvOutput's.
func decideDNS(name string, files map[string]resolvFile) nodeDNS {
	etc, sys := files[etcResolvConf], files[systemdResolvConf]
	if up := etc.usable(); len(up) > 0 {
		return nodeDNS{resolvConf: etcResolvConf, upstreams: up}
	}
	etcSays := fmt.Sprintf("%s's %s names %s", name, etcResolvConf, etc.describe())
	if !etc.found {
		etcSays = fmt.Sprintf("%s has no %s", name, etcResolvConf)
	}
	fix := "list a DNS server the node reaches over its network in " + etcResolvConf + " (with systemd-resolved: set DNS= in " +
		"/etc/systemd/resolved.conf or in the interface's network configuration, so that " + systemdResolvConf + " lists it), " +
		"or set clusterUpstreamDNS; then retry"
	if !sys.found {
		return nodeDNS{resolvConf: etcResolvConf, problem: fmt.Sprintf("%s and %s is missing: pods and CoreDNS would get a resolver that is not theirs; %s",
			etcSays, systemdResolvConf, fix)}
	}
	if up := sys.usable(); len(up) > 0 {
		return nodeDNS{resolvConf: systemdResolvConf, upstreams: up}
	}
	return nodeDNS{resolvConf: systemdResolvConf, problem: fmt.Sprintf("%s and %s names %s: pods and CoreDNS would get a resolver that is not theirs; %s",
		etcSays, systemdResolvConf, sys.describe(), fix)}
}
