package model

// UpgradeConfig tunes a Kubernetes upgrade of the cluster.
type UpgradeConfig struct {
	// MaxUnavailable is how many worker nodes are drained and upgraded
	// at once (default 1).
	MaxUnavailable int `json:"maxUnavailable,omitempty"`
}

// MaxUpgradeUnavailable bounds UpgradeConfig.MaxUnavailable.
const MaxUpgradeUnavailable = 50

// UpgradeBatch returns how many workers an upgrade takes down at once.
func (c *ClusterConfig) UpgradeBatch() int {
	if c == nil || c.Upgrade == nil || c.Upgrade.MaxUnavailable <= 0 || c.Upgrade.MaxUnavailable > MaxUpgradeUnavailable {
		return 1
	}
	return c.Upgrade.MaxUnavailable
}
