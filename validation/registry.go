package validation

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// registryLike is an example registry address for messages.
const registryLike = "registry.example.com:5000 or https://registry.example.com"

// validateRegistries checks the private registries the nodes pull from:
// each url a registry address, user one line, caCert PEM certificates.
// Passwords are secrets sent as they are and never quoted in a message.
func validateRegistries(c *collector, regs []model.PrivateRegistry) {
	for i, r := range regs {
		path := index("privateRegistries", i)
		if r.URL == "" {
			c.addf(path+".url", "is required: give the registry address, like registry.example.com:5000")
		} else if p := registryURLProblem(r.URL); p != "" {
			c.addf(path+".url", "%s", p)
		}
		switch {
		case len(r.User) > maxRegistryUserLen:
			c.addf(path+".user", "is %d characters long; use at most %d", len(r.User), maxRegistryUserLen)
		case hasControl(r.User):
			c.addf(path+".user", "contains a control character or invalid UTF-8; give the user name on one line")
		}
		if r.CACert != "" {
			if p := caCertProblem(r.CACert); p != "" {
				c.addf(path+".caCert", "%s", p)
			}
		}
	}
}

// registryURLProblem says why s is not a registry address, or returns ""
// when it is: a bare host[:port], or an http or https URL of one, with at
// most a trailing '/' — no user, path, query or fragment. The host is a
// DNS name or an IP address (IPv6 in brackets).
func registryURLProblem(s string) string {
	if hasControl(s) || strings.ContainsFunc(s, func(r rune) bool { return r == ' ' }) {
		return fmt.Sprintf("contains white space or control characters; give an address like %s", registryLike)
	}
	raw := s
	if !strings.Contains(s, "://") {
		raw = "https://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Sprintf("%q is not a registry address; give one like %s", s, registryLike)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme %q is not supported; use https:// or http://, or give a bare host[:port] like %s", u.Scheme, registryLike)
	case u.User != nil:
		return "must not carry a user or password; put them in the registry's user and password fields"
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("%q has a path, query or fragment; give only the registry's host[:port], like %s", s, registryLike)
	}
	host := u.Hostname()
	if strings.Contains(host, ":") && !strings.HasPrefix(u.Host, "[") {
		return fmt.Sprintf("%q: write an IPv6 address in brackets, like [fd00::5]:5000", s)
	}
	if host == "" {
		return fmt.Sprintf("%q has no host; give one like %s", s, registryLike)
	}
	if _, ok := parseIP(host); !ok && subdomainProblem(strings.ToLower(host)) != "" {
		return fmt.Sprintf("host %q is neither a DNS name nor an IP address; give an address like %s", host, registryLike)
	}
	if port := u.Port(); port != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Sprintf("port %q is not a number; use a port between %d and %d", port, minPort, maxPort)
		}
		if p := portProblem(n); p != "" {
			return "port " + p
		}
	}
	return ""
}

// caCertProblem says why s is not one or more PEM certificates, or
// returns "" when it is.
func caCertProblem(s string) string {
	const like = "paste the registry's CA certificate, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----"
	rest := []byte(s)
	found := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Sprintf("holds a %q block, not a certificate; %s", block.Type, like)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return "holds a certificate that cannot be parsed; " + like
		}
		found++
	}
	if found == 0 || strings.TrimSpace(string(rest)) != "" {
		return "is not PEM; " + like
	}
	return ""
}
