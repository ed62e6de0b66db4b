package model

// LoadBalance is the original singlecloud's optional external load
// balancer section of a cluster config. Its clients send it (usually
// disabled), so it is accepted, stored and shown again; enabling it is
// refused because this build cannot manage a load balancer yet. The
// password is write-only: the server drops it before storing, as nothing
// uses it.
type LoadBalance struct {
	Enable       bool   `json:"enable"`
	MasterServer string `json:"masterServer,omitempty"`
	BackupServer string `json:"backupServer,omitempty"`
	User         string `json:"user,omitempty"`
	Password     string `json:"password,omitempty"`
}
