package transport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// Helpers for the tests against real sshd hosts of the testbed.

// testTimeout bounds each test's operations against the hosts.
const testTimeout = time.Minute

// startHosts starts n hosts running sshd only.
func startHosts(t *testing.T, n int) []*testbed.Host {
	t.Helper()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedNamespaces, testbed.NeedSSHD)
	return testbed.StartHosts(t, n, testbed.HostOptions{})
}

// targetFor is the Target of a host, with the key parsed from its PEM.
func targetFor(t *testing.T, h *testbed.Host) Target {
	t.Helper()
	signer, err := ParsePrivateKey(h.ClientKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Node: h.Name, Address: h.Address, Signer: signer}
}

// fastOptions keep failing dials short in tests.
func fastOptions() Options {
	return Options{DialTimeout: 2 * time.Second, HandshakeTimeout: 5 * time.Second, RetryBackoff: 50 * time.Millisecond}
}

// dialHost connects to h; the client is closed at the end of the test.
func dialHost(t *testing.T, h *testbed.Host, opts Options) *Client {
	t.Helper()
	d, err := NewDialer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := d.Dial(ctx, targetFor(t, h))
	if err != nil {
		t.Fatalf("dial %s: %v", h.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testContext is bounded by testTimeout and cancelled at the end of the
// test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// uniqueSleep returns a sleep command no other test runs, and a pgrep
// pattern for it that does not match the pgrep command line itself.
func uniqueSleep() (cmd, pattern string) {
	n := 900000 + rand.IntN(99999)
	return fmt.Sprintf("sleep %d", n), fmt.Sprintf("slee[p] %d", n)
}

// pgrep returns the PIDs of the host's processes whose command line
// matches pattern (the machine shares one PID namespace with its hosts,
// so the pattern must be unique).
func pgrep(t *testing.T, h *testbed.Host, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Command(ctx, "pgrep", "-f", pattern).Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 {
		return nil
	}
	if err != nil {
		t.Fatalf("pgrep on %s: %v", h.Name, err)
	}
	return strings.Fields(string(out))
}

// waitFor polls cond every 20 ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
