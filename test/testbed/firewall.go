package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// bridgeNFCall is set when br_netfilter passes bridged frames through the
// iptables FORWARD chain, where a DROP policy (set by a Docker running on
// the machine) would cut the hosts off from each other.
const bridgeNFCall = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// forwardRule is the iptables rule that lets a slot's bridge forward
// between its own ports.
func forwardRule(bridge string) []string {
	return []string{"FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT"}
}

// ensureForwardRule inserts forwardRule when bridged traffic is filtered
// and the FORWARD policy is not ACCEPT; otherwise it changes nothing.
func ensureForwardRule(bridge string) error {
	if v, err := os.ReadFile(bridgeNFCall); err != nil || strings.TrimSpace(string(v)) != "1" {
		return nil
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	policy, err := iptables("-S", "FORWARD", "1")
	if err != nil {
		// -S CHAIN 1 prints the first rule; old versions only accept -S CHAIN.
		if policy, err = iptables("-S", "FORWARD"); err != nil {
			return err
		}
	}
	if strings.Contains(policy, "-P FORWARD ACCEPT") {
		return nil
	}
	_, err = iptables(append([]string{"-I"}, forwardRule(bridge)...)...)
	return err
}

// removeForwardRule deletes forwardRule if it is there.
func removeForwardRule(bridge string) error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	if _, err := iptables(append([]string{"-C"}, forwardRule(bridge)...)...); err != nil {
		return nil // not there
	}
	_, err := iptables(append([]string{"-D"}, forwardRule(bridge)...)...)
	return err
}

func iptables(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w", "5"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
