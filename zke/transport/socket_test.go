package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

func TestCheckDockerAccess(t *testing.T) {
	h := startHosts(t, 1)[0]
	ctx := testContext(t)
	// A socket owned by root, mode 0660, in the host's own /tmp.
	const sock = "/tmp/zke-docker.sock"
	l, err := net.Listen("unix", h.Path(sock))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(h.Path(sock), 0o660); err != nil {
		t.Fatal(err)
	}
	// An unprivileged user (the host's /etc is its own copy) who logs in
	// with the group's key through a second sshd.
	if out, err := h.Exec(ctx, "useradd", "-M", "-d", "/tmp", "-s", "/bin/sh", "-p", "*", "zkeuser"); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	root := dialHost(t, h, fastOptions())
	userTarget := targetFor(t, h)
	userTarget.User = "zkeuser"
	userTarget.Port = startUserSSHD(t, h)
	d, _ := NewDialer(fastOptions())
	user, err := d.Dial(ctx, userTarget)
	if err != nil {
		t.Fatalf("dial as zkeuser: %v", err)
	}
	defer user.Close()

	tests := []struct {
		name     string
		client   *Client
		path     string
		wantHint string // empty: access granted
	}{
		{name: "root may use it", client: root, path: sock},
		{name: "missing socket", client: root, path: "/var/run/nothing.sock", wantHint: "/var/run/nothing.sock does not exist on " + h.Name + ": start Docker"},
		{name: "not a socket", client: root, path: "/etc/hostname", wantHint: "is not a socket"},
		{name: "user not in the group", client: user, path: sock, wantHint: "add user zkeuser to the docker group on " + h.Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.client.CheckDockerAccess(ctx, tt.path)
			if tt.wantHint == "" {
				if err != nil {
					t.Fatalf("CheckDockerAccess = %v", err)
				}
				return
			}
			var ne *NodeError
			if !errors.Is(err, ErrNoDockerAccess) || !errors.As(err, &ne) {
				t.Fatalf("CheckDockerAccess = %v, want a *NodeError matching ErrNoDockerAccess", err)
			}
			if !strings.Contains(err.Error(), tt.wantHint) {
				t.Errorf("error %q lacks %q", err, tt.wantHint)
			}
		})
	}

	// Dialing the socket the user may not open says so.
	start := time.Now()
	_, err = user.DialContext(ctx, "unix", sock)
	if !errors.Is(err, ErrForward) || !strings.Contains(err.Error(), "user zkeuser may not use "+sock) {
		t.Fatalf("DialContext as zkeuser = %v, want ErrForward explaining the permission", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("explaining the failure took %s", time.Since(start))
	}
}

// startUserSSHD starts a second sshd in h, on port 2222, whose authorized
// keys (the group's key) any user may read, and returns its port.
func startUserSSHD(t *testing.T, h *testbed.Host) int {
	t.Helper()
	const port = 2222
	dir := filepath.Join(h.Dir, "zke-sshd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(mustKey(t), "")
	if err != nil {
		t.Fatal(err)
	}
	config := "Port 2222\nListenAddress 0.0.0.0\nHostKey " + dir + "/host_key\nAuthorizedKeysFile " + dir + "/authorized_keys\n" +
		"PidFile " + dir + "/sshd.pid\nPubkeyAuthentication yes\nPasswordAuthentication no\nUsePAM no\nStrictModes no\n" +
		"AllowStreamLocalForwarding yes\nSubsystem sftp internal-sftp\n"
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"host_key", pem.EncodeToMemory(block), 0o600},
		{"authorized_keys", ssh.MarshalAuthorizedKey(h.ClientSigner.PublicKey()), 0o644},
		{"sshd_config", []byte(config), 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	// Under a name of its own, so that its log is not the first sshd's.
	program := filepath.Join(dir, "zke-sshd")
	if err := os.Symlink("/usr/sbin/sshd", program); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Start(program, "-D", "-e", "-f", filepath.Join(dir, "sshd_config")); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(h.Address, "2222")
	waitFor(t, 10*time.Second, "the second sshd did not listen", func() bool {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return port
}

// mustKey returns a new Ed25519 private key.
func mustKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}
