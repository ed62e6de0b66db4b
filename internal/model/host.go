package model

// HostSpec is what an admin registers about a host: how singlecloud
// reaches it over SSH, and its labels (for selectors).
type HostSpec struct {
	// Name identifies the host (a DNS-1123 label).
	Name string `json:"name"`
	// Address is the host's IP address.
	Address string `json:"address"`
	// Port is sshd's port; 0 means 22.
	Port int `json:"port,omitempty"`
	// User is the SSH login; "" means root.
	User string `json:"user,omitempty"`
	// SSHKey is the private key singlecloud logs in with: a secret,
	// write-only (sealed at rest, never shown). An update without one
	// keeps the stored key.
	SSHKey string `json:"sshKey,omitempty"`
	// Labels select the host (commands, environments).
	Labels map[string]string `json:"labels,omitempty"`
}
