package zke

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// masqChain is zke's chain in each worker's nat table. The bridge CNI
// config does not masquerade (ipMasq false: the plugin would SNAT every
// destination outside the node's own pod CIDR, pods on other nodes
// included); this chain masquerades what the node's pods send out of the
// cluster, and nothing they send to a pod or service address, so that a
// pod sees the address of a pod on another node that talks to it.
const masqChain = "ZKE-MASQ"

// podNetworkScript is worker n's pod network set-up, run as one
// command: a route to every other worker's pod CIDR through that
// worker's internal address (host-gw, tagged routeProto), and masqChain
// for n's pod CIDR, replaced atomically and jumped to from POSTROUTING
// once. Run again it changes nothing. Every value is shell-quoted.
func (r *run) podNetworkScript(n node, ws []node, cidrs map[string]string) string {
	var s strings.Builder
	s.WriteString("set -e\n")
	for _, m := range ws {
		if m.Name != n.Name {
			fmt.Fprintf(&s, "ip route replace %s via %s proto %s\n", shellQuote(cidrs[m.Name]), shellQuote(m.InternalAddress), routeProto)
		}
	}
	ipt := iptablesFor(r.cfg.ClusterCIDR)
	restore := []string{"*nat", ":" + masqChain + " - [0:0]"}
	for _, rule := range r.masqRules(cidrs[n.Name]) {
		restore = append(restore, "-A "+masqChain+" "+strings.Join(rule, " "))
	}
	restore = append(restore, "COMMIT")
	// --noflush keeps the table's other chains; the chain's own line
	// empties it, and the new rules replace the old in one commit.
	fmt.Fprintf(&s, "printf '%%s\\n' %s | %s-restore -w --noflush\n", quoteAll(restore), ipt)
	fmt.Fprintf(&s, "%[1]s -w -t nat -C POSTROUTING -j %[2]s 2>/dev/null || %[1]s -w -t nat -A POSTROUTING -j %[2]s\n", ipt, masqChain)
	// The boot these routes and rules were set in (bootIDLinePrefix):
	// none of them outlives it.
	fmt.Fprintf(&s, "printf '%s%%s\\n' \"$(cat /proc/sys/kernel/random/boot_id)\"\n", bootIDLinePrefix)
	return s.String()
}

// bootIDLinePrefix starts the line of podNetworkScript's output that
// names the boot of the node the routes were set in.
const bootIDLinePrefix = "boot-id "

// parseBootID reads podNetworkScript's boot id line, or "".
func parseBootID(out string) string {
	for _, ln := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(ln, bootIDLinePrefix); ok {
			return strings.TrimSpace(id)
		}
	}
	return ""
}

// notePodRoutesBoot records on n's Node the boot its bridge pod routes
// were set in (PodRoutesBootAnnotation), so that the cluster's health
// can tell a worker that rebooted since, whose routes are gone. A write
// that lost a race with the kubelet is made again.
func notePodRoutesBoot(ctx context.Context, kube kubeclient.Interface, n node, bootID string) error {
	if bootID == "" {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{PodRoutesBootAnnotation: bootID}}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return nodeErr(n, fmt.Errorf("note the boot of the pod routes on node %s: %w", n.Name, err), "")
	}
	return nil
}

// masqRules are masqChain's rules on a worker whose pods have podCIDR,
// each as iptables arguments: traffic that does not come from the node's
// pods, or goes to the cluster's pod or service network, returns
// unchanged; the rest is masqueraded.
func (r *run) masqRules(podCIDR string) [][]string {
	rules := [][]string{{"!", "-s", podCIDR, "-j", "RETURN"}, {"-d", r.cfg.ClusterCIDR, "-j", "RETURN"}}
	if iptablesFor(r.cfg.ServiceCIDR) == iptablesFor(r.cfg.ClusterCIDR) {
		rules = append(rules, []string{"-d", r.cfg.ServiceCIDR, "-j", "RETURN"})
	}
	return append(rules, []string{"-j", "MASQUERADE"})
}

// masqMissingPrefix starts each line of masqCheckScript's output that
// names a rule the node lacks.
const masqMissingPrefix = "missing "

// masqCheckScript prints masqMissingPrefix and the rule for every rule of
// masqChain, and its jump from POSTROUTING, that the worker whose pods
// have podCIDR lacks. It changes nothing.
func (r *run) masqCheckScript(podCIDR string) string {
	ipt := iptablesFor(r.cfg.ClusterCIDR)
	rules := [][]string{{"POSTROUTING", "-j", masqChain}}
	for _, rule := range r.masqRules(podCIDR) {
		rules = append(rules, append([]string{masqChain}, rule...))
	}
	var s strings.Builder
	for _, rule := range rules {
		fmt.Fprintf(&s, "%s -w -t nat -C %s 2>/dev/null || echo %s\n", ipt, quoteAll(rule), shellQuote(masqMissingPrefix+strings.Join(rule, " ")))
	}
	return s.String()
}

// verifyMasq checks that worker n, whose pods have podCIDR, has
// masqChain's rules and the jump to it.
func (r *run) verifyMasq(ctx context.Context, n node, c *transport.Client, podCIDR string) error {
	res, err := c.Exec(ctx, r.masqCheckScript(podCIDR), transport.ExecOptions{})
	if err != nil {
		return nodeErr(n, fmt.Errorf("read the pod network's nat rules: %w", err), "")
	}
	var missing []string
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		if rule, ok := strings.CutPrefix(line, masqMissingPrefix); ok {
			missing = append(missing, rule)
		}
	}
	if len(missing) > 0 {
		return stale(n, "lacks the nat rules %s", strings.Join(missing, "; "))
	}
	return nil
}

// maxMasqJumps bounds the jumps to masqChain that clean-up deletes: zke
// adds one, and a loop on a command that keeps succeeding must end.
const maxMasqJumps = 16

// masqCleanup is the part of a node's clean-up that removes masqChain
// and every jump to it, in both address families; it never fails.
func masqCleanup() string {
	return fmt.Sprintf(`for t in iptables ip6tables; do command -v "$t" >/dev/null 2>&1 || continue; `+
		`i=0; while [ "$i" -lt %[2]d ] && "$t" -w -t nat -D POSTROUTING -j %[1]s 2>/dev/null; do i=$((i+1)); done; `+
		`"$t" -w -t nat -F %[1]s 2>/dev/null; "$t" -w -t nat -X %[1]s 2>/dev/null; done; true`, masqChain, maxMasqJumps)
}

// iptablesFor is the iptables command of cidr's address family.
func iptablesFor(cidr string) string {
	if p, err := netip.ParsePrefix(cidr); err == nil && p.Addr().Is6() {
		return "ip6tables"
	}
	return "iptables"
}
