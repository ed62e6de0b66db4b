package validation

import (
	"github.com/zdnscloud/singlecloud/internal/model"
)

// ReservedHostName is the path segment of the commands run on hosts
// (/hosts/commands), which no host may be named.
const ReservedHostName = "commands"

// ValidateHost checks a host registration. keyRequired is true when the
// host is new (an update without a key keeps the stored one). Every
// violation names its field; none quotes the key.
func ValidateHost(h model.HostSpec, keyRequired bool) error {
	var c collector
	if h.Name == "" {
		c.addf("name", "is required: give the host a name")
	} else if p := labelProblem(h.Name); p != "" {
		c.addf("name", "%s (a host name is a DNS-1123 label)", p)
	} else if h.Name == ReservedHostName {
		c.addf("name", "%q is reserved (/hosts/commands); choose another name", h.Name)
	}
	switch ip, ok := parseIP(h.Address); {
	case h.Address == "":
		c.addf("address", "is required: give the IP address singlecloud reaches the host at over SSH")
	case !ok:
		c.addf("address", "%q is not an IP address; give the host's IP, like 10.0.0.11", h.Address)
	case ip.IsUnspecified() || ip.IsMulticast():
		c.addf("address", "%s is not a host's address; give the host's own IP", ip)
	}
	if h.Port < 0 || h.Port > 65535 {
		c.addf("port", "%d is not a TCP port; give sshd's port (1-65535), or leave it out for 22", h.Port)
	}
	if h.User != "" {
		if p := sshUserProblem(h.User); p != "" {
			c.addf("user", "%s", p)
		}
	}
	if h.SSHKey != "" || keyRequired {
		if p := sshKeyProblem(h.SSHKey); p != "" {
			c.addf("sshKey", "%s", p)
		}
	}
	validateLabels(&c, "labels", h.Labels)
	return c.err()
}
