package validation

import (
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validateVersionChange checks a changed kubernetesVersion against
// Kubernetes' version-skew policy: a patch upgrade within a minor, or an
// upgrade to the next minor; skipping a minor, changing the major or going
// down is refused (a failed upgrade is undone with ?action=revert). The
// nodes must not change in the same update, and neither may the upgrade
// settings be out of range.
func validateVersionChange(c *collector, old, newCfg model.ClusterConfig) {
	if up := newCfg.Upgrade; up != nil && (up.MaxUnavailable < 0 || up.MaxUnavailable > model.MaxUpgradeUnavailable) {
		c.addf("upgrade.maxUnavailable", "%d is out of range; give 1 to %d workers (0 keeps the default, 1)", up.MaxUnavailable, model.MaxUpgradeUnavailable)
	}
	from, to := old.KubernetesVersion, newCfg.KubernetesVersion
	if from == to {
		return
	}
	o, okOld := parseRelease(from)
	n, okNew := parseRelease(to)
	if !okOld || !okNew {
		return // the form is reported by validateKubernetesVersion
	}
	switch {
	case n[0] != o[0]:
		c.addf("kubernetesVersion", "%s → %s changes the major version; Kubernetes upgrades one minor version at a time", from, to)
	case n[1] == o[1]+1, n[1] == o[1] && n[2] > o[2]:
		if !sameNodes(old.Nodes, newCfg.Nodes) {
			c.addf("nodes", "change the nodes and kubernetesVersion in separate updates: an upgrade replaces every node's components in turn")
		}
	case n[1] > o[1]+1:
		c.addf("kubernetesVersion", "%s → %s skips a minor version; Kubernetes' version-skew policy allows one minor at a time: upgrade to v%d.%d first", from, to, o[0], o[1]+1)
	default:
		c.addf("kubernetesVersion", "%s → %s goes down; Kubernetes does not support downgrades: restore a snapshot, or undo a failed upgrade with ?action=revert", from, to)
	}
}

// parseRelease reads vMAJOR.MINOR.PATCH.
func parseRelease(v string) ([3]int, bool) {
	var out [3]int
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) != 3 || !strings.HasPrefix(v, "v") {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

// sameNodes reports whether a and b list the same nodes (names, addresses
// and roles, in order).
func sameNodes(a, b []model.Node) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !sameAddress(a[i].Address, b[i].Address) || !sameRoles(a[i].Roles, b[i].Roles) {
			return false
		}
	}
	return true
}
