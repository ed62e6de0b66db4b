package testbed_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// sshRun runs one command over a new SSH connection and returns its output.
func sshRun(ctx context.Context, h *testbed.Host, command string) (string, error) {
	c, err := h.DialSSH(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(command)
	return string(out), err
}

func TestHostsSSH(t *testing.T) {
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	for _, h := range hosts {
		t.Run(h.Name, func(t *testing.T) {
			out, err := sshRun(ctx, h, "hostname; ip -4 -o addr show dev eth0; id -u")
			if err != nil {
				t.Fatalf("ssh %s: %v: %s", h.Address, err, out)
			}
			for _, want := range []string{h.Name + "\n", h.Address + "/24", "\n0\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("ssh output %q lacks %q", out, want)
				}
			}

			// SFTP works (internal-sftp) and writes land in the host's own /tmp.
			c, err := h.DialSSH(ctx)
			if err != nil {
				t.Fatalf("ssh: %v", err)
			}
			defer c.Close()
			sc, err := sftp.NewClient(c)
			if err != nil {
				t.Fatalf("sftp: %v", err)
			}
			defer sc.Close()
			f, err := sc.Create("/tmp/greeting")
			if err != nil {
				t.Fatalf("sftp create: %v", err)
			}
			if _, err := io.WriteString(f, "hello from "+h.Name); err != nil {
				t.Fatalf("sftp write: %v", err)
			}
			f.Close()
			got, err := h.ReadFile("/tmp/greeting")
			if err != nil || string(got) != "hello from "+h.Name {
				t.Fatalf("/tmp/greeting on %s = %q, %v", h.Name, got, err)
			}
		})
	}
}

func TestHostsRefuseWrongHostKey(t *testing.T) {
	h := testbed.StartHosts(t, 1, testbed.HostOptions{})[0]
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.SSHConfig()
	cfg.HostKeyCallback = ssh.FixedHostKey(other)
	c, err := ssh.Dial("tcp", h.SSHAddress(), cfg)
	if err == nil {
		c.Close()
		t.Fatal("ssh with a wrong host key succeeded, want a refusal")
	}
	if !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("ssh with a wrong host key: %v, want a host key mismatch", err)
	}

	// After a rotation the old key is refused and the new one accepted.
	old, oldKey := h.SSHConfig(), h.HostPublicKey.Marshal()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.RotateHostKey(ctx); err != nil {
		t.Fatal(err)
	}
	if string(h.HostPublicKey.Marshal()) == string(oldKey) {
		t.Fatal("HostPublicKey is unchanged after RotateHostKey")
	}
	if c, err := ssh.Dial("tcp", h.SSHAddress(), old); err == nil {
		c.Close()
		t.Fatal("ssh pinned to the key before the rotation succeeded, want a host key mismatch")
	}
	if out, err := sshRun(ctx, h, "true"); err != nil {
		t.Fatalf("ssh with the rotated key: %v: %s", err, out)
	}
}

func TestHostsReachEachOther(t *testing.T) {
	testbed.Require(t, testbed.NeedBusybox)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, from := range hosts {
		targets := []string{from.Gateway}
		for _, to := range hosts {
			if to != from {
				targets = append(targets, to.Address, to.Name)
			}
		}
		for _, to := range targets {
			if out, err := from.Exec(ctx, "busybox", "ping", "-c", "1", "-W", "5", to); err != nil {
				t.Errorf("%s cannot reach %s: %v: %s", from.Name, to, err, out)
			}
		}
	}
	// Each host has its own /etc/hostname, cgroup, /run and /tmp.
	machineTmp := t.TempDir()
	for _, h := range hosts {
		out, err := h.Run(ctx, "cat /etc/hostname /proc/self/cgroup; ls /run; test ! -e "+machineTmp+" && echo own-tmp")
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
		for _, want := range []string{h.Name + "\n", ":" + h.CgroupRoot[:strings.LastIndex(h.CgroupRoot, "/")] + "/daemons\n", "sshd.pid", "own-tmp"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: view %q lacks %q", h.Name, out, want)
			}
		}
	}
}

func TestSeparateCallsGetSeparateSubnets(t *testing.T) {
	a := testbed.StartHosts(t, 1, testbed.HostOptions{})[0]
	b := testbed.StartHosts(t, 1, testbed.HostOptions{})[0]
	subnet := func(h *testbed.Host) string { return h.Address[:strings.LastIndex(h.Address, ".")] }
	if subnet(a) == subnet(b) {
		t.Fatalf("two StartHosts calls share subnet %s", subnet(a))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, h := range []*testbed.Host{a, b} {
		if out, err := sshRun(ctx, h, "hostname"); err != nil || strings.TrimSpace(out) != h.Name {
			t.Errorf("ssh %s: %q, %v", h.Address, out, err)
		}
	}
}
