package transport

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"
)

// Defaults for Options. Each bounds a wait that would otherwise be as long
// as the kernel's or the server's.
const (
	// DefaultDialTimeout bounds one TCP connect. A node on the same network
	// answers in milliseconds; 10 s tolerates a congested link or a lost
	// SYN (the first SYN retransmission is after 1 s) while a dead node,
	// whose connect would otherwise hang for the kernel's ~2 minutes of
	// SYN retries, fails every attempt of the connect step in well under a
	// minute.
	DefaultDialTimeout = 10 * time.Second
	// DefaultHandshakeTimeout bounds the SSH version exchange, key exchange
	// and authentication on an established TCP connection: a few round
	// trips and one signature on each side. sshd's own LoginGraceTime
	// (120 s) is far too long to wait for a node that accepted the
	// connection but is wedged or is not an SSH server.
	DefaultHandshakeTimeout = 15 * time.Second
	// DefaultKeepaliveInterval is how often an idle connection is probed.
	// NAT tables and firewalls commonly drop idle TCP flows after a few
	// minutes; 15 s keeps the flow alive and notices a dead node within
	// DefaultKeepaliveInterval+DefaultKeepaliveTimeout.
	DefaultKeepaliveInterval = 15 * time.Second
	// DefaultKeepaliveTimeout bounds the wait for one keepalive reply. A
	// reply is one round trip; a node that does not answer in 10 s is not
	// going to run the next command either.
	DefaultKeepaliveTimeout = 10 * time.Second
	// DefaultDialAttempts is how many times Dial tries a node before giving
	// up: enough to ride over a node that is still booting or a dropped
	// packet, few enough that a wrong address is reported quickly.
	DefaultDialAttempts = 3
	// DefaultRetryBackoff is the wait after the first failed attempt; it
	// doubles after each further failure up to maxRetryBackoff.
	DefaultRetryBackoff = time.Second
	// maxRetryBackoff caps the wait between two attempts so that the whole
	// connect step stays bounded whatever DialAttempts is.
	maxRetryBackoff = 8 * time.Second
	// DefaultPort is the SSH port.
	DefaultPort = 22
	// DefaultUser is the login used when Target.User is empty.
	DefaultUser = "root"
	// DefaultMaxOutput caps what Exec keeps of each of stdout and stderr, so
	// that a chatty command cannot exhaust the server's memory. zke's
	// commands print little; 4 MiB holds any of their outputs.
	DefaultMaxOutput = 4 << 20
	// maxSessions bounds the sessions (commands, SFTP) open at once on one
	// connection. OpenSSH refuses more than MaxSessions (default 10); two
	// are kept free for the sessions that kill cancelled commands.
	maxSessions = 8
)

// Options tunes a Dialer. The zero value gives the defaults above; a
// negative duration or count is an error.
type Options struct {
	// DialTimeout bounds each TCP connect (DefaultDialTimeout).
	DialTimeout time.Duration
	// HandshakeTimeout bounds the SSH handshake and authentication of each
	// attempt (DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// KeepaliveInterval is the time between keepalive requests
	// (DefaultKeepaliveInterval).
	KeepaliveInterval time.Duration
	// KeepaliveTimeout bounds the wait for each keepalive reply; a peer
	// that does not answer in time is considered dead and the client is
	// closed (DefaultKeepaliveTimeout).
	KeepaliveTimeout time.Duration
	// DialAttempts is how many times a retryable failure (unreachable,
	// handshake) is retried in total (DefaultDialAttempts).
	DialAttempts int
	// RetryBackoff is the first wait between attempts; it doubles up to
	// 8 s (DefaultRetryBackoff).
	RetryBackoff time.Duration
	// MaxOutput caps the bytes Exec keeps of each output stream
	// (DefaultMaxOutput).
	MaxOutput int
}

// withDefaults validates o and fills its zero fields.
func (o Options) withDefaults() (Options, error) {
	if o.DialTimeout < 0 || o.HandshakeTimeout < 0 || o.KeepaliveInterval < 0 || o.KeepaliveTimeout < 0 ||
		o.RetryBackoff < 0 || o.DialAttempts < 0 || o.MaxOutput < 0 {
		return o, fmt.Errorf("transport options: durations, attempts and sizes must not be negative")
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if o.KeepaliveInterval == 0 {
		o.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if o.KeepaliveTimeout == 0 {
		o.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	if o.DialAttempts == 0 {
		o.DialAttempts = DefaultDialAttempts
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.MaxOutput == 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	return o, nil
}

// Target says which node to reach and how to log in. Node and Address name
// the node in every error.
type Target struct {
	// Node is the node's name in the cluster config (required).
	Node string
	// Address is the node's host name or IP address (required).
	Address string
	// Port is sshd's port (DefaultPort when 0).
	Port int
	// User is the login (DefaultUser when empty).
	User string
	// Signer is the cluster's private key (required); see
	// ParsePrivateKey.
	Signer ssh.Signer
	// HostKey is the node's pinned host key in authorized_keys format
	// ("ssh-ed25519 AAAA..."), as returned by Client.HostKey on first
	// contact. Empty trusts whatever key the node presents (trust on first
	// use).
	HostKey string
}

// normalized fills the defaults of t and checks its required fields.
func (t Target) normalized() (Target, error) {
	if t.Port == 0 {
		t.Port = DefaultPort
	}
	if t.User == "" {
		t.User = DefaultUser
	}
	switch {
	case t.Node == "":
		return t, fmt.Errorf("%w: node name is empty", ErrInvalidTarget)
	case t.Address == "":
		return t, fmt.Errorf("%w: node %s has no address", ErrInvalidTarget, t.Node)
	case t.Port < 1 || t.Port > 65535:
		return t, fmt.Errorf("%w: node %s: ssh port %d is not between 1 and 65535", ErrInvalidTarget, t.Node, t.Port)
	case t.Signer == nil:
		return t, fmt.Errorf("%w: node %s: no ssh private key", ErrInvalidTarget, t.Node)
	}
	return t, nil
}

// hostPort is the address Dial connects to, e.g. "10.0.0.5:22".
func (t Target) hostPort() string {
	return net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
}
