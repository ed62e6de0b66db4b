package testbed

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSH bounds.
const (
	// SSHPort is where every host's sshd listens.
	SSHPort = 22
	// sshDialTimeout bounds TCP connect plus SSH handshake to a host on the
	// local bridge, normally a few milliseconds.
	sshDialTimeout = 10 * time.Second
	// sshProbeTimeout bounds one readiness dial while sshd starts.
	sshProbeTimeout = time.Second
)

// sshdConfig is the host's sshd configuration: key-only root login with
// the group's client key, internal-sftp, no PAM (no session modules on a
// shared machine), StrictModes off because keys live under /tmp, and
// limits high enough for many parallel sessions.
const sshdConfig = `Port 22
ListenAddress 0.0.0.0
HostKey %[1]s/ssh/host_ed25519_key
AuthorizedKeysFile %[1]s/ssh/authorized_keys
PidFile /run/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
MaxStartups 200
MaxSessions 200
Subsystem sftp internal-sftp
LogLevel INFO
`

// startSSHD writes the host key and configuration, then starts sshd
// (runSSHD).
func (g *hostGroup) startSSHD(ctx context.Context, h *Host) error {
	key, err := writeHostKey(h)
	if err != nil {
		return err
	}
	h.HostPublicKey = key
	files := map[string][]byte{
		"authorized_keys": g.authorizedKey,
		"sshd_config":     fmt.Appendf(nil, sshdConfig, h.Dir),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(h.Dir, "ssh", name), data, 0o600); err != nil {
			return fmt.Errorf("write sshd %s: %w", name, err)
		}
	}
	return g.runSSHD(ctx, h)
}

// runSSHD starts sshd with the files startSSHD wrote and waits until it
// accepts connections on the host's address. A reboot runs only this, so
// the host keeps its host key, as a real machine does.
func (g *hostGroup) runSSHD(ctx context.Context, h *Host) error {
	p, err := h.startDaemon("sshd", g.sshd, "-D", "-e", "-f", filepath.Join(h.Dir, "ssh", "sshd_config"))
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.sshd = p
	h.mu.Unlock()
	dialer := net.Dialer{Timeout: sshProbeTimeout}
	err = poll(ctx, func(ctx context.Context) error {
		if p.exited() {
			return p.exitError()
		}
		conn, err := dialer.DialContext(ctx, "tcp", h.SSHAddress())
		if err != nil {
			return err
		}
		return conn.Close()
	})
	if err != nil {
		return fmt.Errorf("%w: sshd at %s: %w", ErrNotReady, h.SSHAddress(), err)
	}
	return nil
}

// writeHostKey writes a new ed25519 host key for h's sshd and returns its
// public half.
func writeHostKey(h *Host) (ssh.PublicKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate host key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, h.Name)
	if err != nil {
		return nil, fmt.Errorf("encode host key: %w", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	files := map[string][]byte{
		"host_ed25519_key":     pem.EncodeToMemory(block),
		"host_ed25519_key.pub": ssh.MarshalAuthorizedKey(signer.PublicKey()),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(h.Dir, "ssh", name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write sshd %s: %w", name, err)
		}
	}
	return signer.PublicKey(), nil
}

// RotateHostKey gives the host's sshd a new host key, as a reinstall
// would, and returns once sshd presents it; HostPublicKey is the new key
// afterwards. It must not run concurrently with SSHConfig or DialSSH.
func (h *Host) RotateHostKey(ctx context.Context) error {
	h.mu.Lock()
	p := h.sshd
	h.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s: rotate host key: sshd was not started", h.Name)
	}
	key, err := writeHostKey(h)
	if err != nil {
		return fmt.Errorf("%s: rotate host key: %w", h.Name, err)
	}
	// The files hold the new key from here on, whatever happens next.
	h.HostPublicKey = key
	// SIGHUP makes sshd re-execute itself, reading its keys again.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		return fmt.Errorf("%s: rotate host key: signal sshd: %w", h.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	err = poll(ctx, func(ctx context.Context) error {
		if p.exited() {
			return p.exitError()
		}
		c, err := h.DialSSH(ctx)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		return fmt.Errorf("%s: rotate host key: %w: sshd at %s does not present the new key: %w", h.Name, ErrNotReady, h.SSHAddress(), err)
	}
	return nil
}

// SignalSSHD sends sig to the host's sshd: SIGSTOP stops it (connections
// are accepted by the kernel but never answered, as with a hung sshd),
// SIGCONT lets it go on.
func (h *Host) SignalSSHD(sig syscall.Signal) error {
	h.mu.Lock()
	p := h.sshd
	h.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s: signal sshd: sshd was not started", h.Name)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s: signal sshd: %w", h.Name, err)
	}
	return nil
}

// startDaemon starts a daemon inside the host, logging to
// Dir/logs/<name>.log; the host's cleanup stops it by PID.
func (h *Host) startDaemon(name, program string, args ...string) (*process, error) {
	return h.startDaemonCmd(name, h.command(program, args...))
}

// startDaemonCmd is startDaemon for a command built by h.command (whose
// environment the caller may have changed).
func (h *Host) startDaemonCmd(name string, cmd *exec.Cmd) (*process, error) {
	p, err := startProcess(name+" on "+h.Name, cmd, filepath.Join(h.Dir, "logs", name+".log"))
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.daemons = append(h.daemons, p)
	h.mu.Unlock()
	return p, nil
}

// SSHAddress is host:port of the host's sshd.
func (h *Host) SSHAddress() string { return net.JoinHostPort(h.Address, fmt.Sprint(SSHPort)) }

// SSHConfig returns a client configuration for root with the group's key
// that accepts only this host's key.
func (h *Host) SSHConfig() *ssh.ClientConfig {
	return &ssh.ClientConfig{
		User:            "root",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(h.ClientSigner)},
		HostKeyCallback: ssh.FixedHostKey(h.HostPublicKey),
		Timeout:         sshDialTimeout,
	}
}

// DialSSH connects to the host's sshd as root with SSHConfig. Connect and
// handshake are bounded by sshDialTimeout and by ctx.
func (h *Host) DialSSH(ctx context.Context) (*ssh.Client, error) {
	return dialSSH(ctx, h.SSHAddress(), h.SSHConfig())
}

// dialSSH dials addr with cfg; the connection's deadline covers the
// handshake and is lifted once authenticated.
func dialSSH(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, sshDialTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() && err == nil {
		// ctx ended during the handshake; the deadline is being cut.
		c.Close()
		return nil, fmt.Errorf("ssh %s: %w", addr, ctx.Err())
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}
