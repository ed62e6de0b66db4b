package validation

import (
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateVersionChange(t *testing.T) {
	tests := []struct {
		name     string
		from, to string
		edit     func(c *model.ClusterConfig)
		want     []string
		reason   string
	}{
		{"same version", "v1.36.3", "v1.36.3", nil, nil, ""},
		{"patch upgrade", "v1.36.3", "v1.36.4", nil, nil, ""},
		{"next minor", "v1.35.4", "v1.36.3", nil, nil, ""},
		{"skip a minor", "v1.34.2", "v1.36.3", nil, []string{"kubernetesVersion"}, "upgrade to v1.35 first"},
		{"down a minor", "v1.36.3", "v1.35.4", nil, []string{"kubernetesVersion"}, "goes down"},
		{"down a patch", "v1.36.3", "v1.36.1", nil, []string{"kubernetesVersion"}, "?action=revert"},
		{"major", "v1.36.3", "v2.0.0", nil, []string{"kubernetesVersion"}, "major version"},
		{"nodes with it", "v1.35.4", "v1.36.3", func(c *model.ClusterConfig) { c.Nodes = c.Nodes[:2] }, []string{"nodes"}, "separate updates"},
		{"maxUnavailable out of range", "v1.35.4", "v1.36.3", func(c *model.ClusterConfig) { c.Upgrade = &model.UpgradeConfig{MaxUnavailable: 51} },
			[]string{"upgrade.maxUnavailable"}, "1 to 50"},
		{"maxUnavailable 2", "v1.35.4", "v1.36.3", func(c *model.ClusterConfig) { c.Upgrade = &model.UpgradeConfig{MaxUnavailable: 2} }, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validCluster(t)
			old.KubernetesVersion = tt.from
			newCfg := cloneConfig(old)
			newCfg.KubernetesVersion = tt.to
			if tt.edit != nil {
				tt.edit(&newCfg)
			}
			checkViolations(t, ValidateUpdate(old, newCfg), tt.want, tt.reason)
		})
	}
	c := model.ClusterConfig{}
	if c.UpgradeBatch() != 1 {
		t.Errorf("default batch %d", c.UpgradeBatch())
	}
}
