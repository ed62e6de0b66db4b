package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
)

func opErr(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: err}}
}

func TestClassifyDial(t *testing.T) {
	target := Target{Node: "node1", Address: "10.0.0.5", Port: 22, User: "root"}
	tests := []struct {
		name     string
		err      error
		wantHint string
	}{
		{name: "refused", err: opErr(syscall.ECONNREFUSED), wantHint: "sshd runs there"},
		{name: "no route to host", err: opErr(syscall.EHOSTUNREACH), wantHint: "no route to 10.0.0.5"},
		{name: "network unreachable", err: opErr(syscall.ENETUNREACH), wantHint: "no route to 10.0.0.5"},
		{name: "connect timed out", err: opErr(syscall.ETIMEDOUT), wantHint: "no answer within 10s"},
		{name: "dialer timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, wantHint: "no answer within 10s"},
		{name: "unknown host", err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nohost", IsNotFound: true}}, wantHint: "cannot resolve"},
		{name: "other", err: errors.New("something"), wantHint: "check that node1 is up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classifyDial(target, "10s", tt.err)
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("classifyDial() = %v, want ErrUnreachable", err)
			}
			if !strings.Contains(err.Hint, tt.wantHint) || !strings.Contains(err.Error(), "node1") {
				t.Errorf("error %q: want hint containing %q and the node's name", err, tt.wantHint)
			}
			if !retryable(err) {
				t.Errorf("unreachable should be retried")
			}
		})
	}
}

func TestClassifyHandshake(t *testing.T) {
	target := Target{Node: "node1", Address: "10.0.0.5", Port: 22, User: "root"}
	pinned := testSigner(t).PublicKey()
	authText := errors.New("ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain")
	mismatch := &HostKeyMismatchError{Node: "node1", Address: "10.0.0.5:22", Want: "SHA256:a", Got: "SHA256:b"}
	tests := []struct {
		name      string
		pin       string
		err       error
		want      error
		wantText  string
		wantRetry bool
	}{
		{name: "auth failure text", err: authText, want: ErrAuthFailed,
			wantText: "ssh node1 (10.0.0.5:22): connect: ssh authentication failed for user root (publickey): add the cluster's public key to ~root/.ssh/authorized_keys on node1"},
		{name: "too many auth failures", err: errors.New("ssh: handshake failed: ssh: disconnect, reason 2: Too many authentication failures"), want: ErrAuthFailed},
		{name: "host key mismatch passes through", err: fmt.Errorf("ssh: handshake failed: %w", mismatch), want: ErrHostKeyMismatch, wantText: "SHA256:b"},
		{name: "pinned type not offered", pin: FormatHostKey(pinned), err: fmt.Errorf("ssh: handshake failed: %w", &ssh.AlgorithmNegotiationError{What: "host key"}), want: ErrHostKeyMismatch},
		{name: "cipher negotiation", err: fmt.Errorf("ssh: handshake failed: %w", &ssh.AlgorithmNegotiationError{What: "client to server cipher"}), want: ErrHandshake, wantText: "share no client to server cipher algorithm"},
		{name: "handshake timeout", err: fmt.Errorf("ssh: handshake failed: %w", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), want: ErrHandshake, wantText: "did not complete within 15s", wantRetry: true},
		{name: "closed by server", err: fmt.Errorf("ssh: handshake failed: %w", io.EOF), want: ErrHandshake, wantText: "closed the connection", wantRetry: true},
		{name: "reset", err: fmt.Errorf("ssh: handshake failed: %w", opErr(syscall.ECONNRESET)), want: ErrHandshake, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newHostKeyPin(Target{Node: "node1", Address: "10.0.0.5", Port: 22, HostKey: tt.pin})
			if err != nil {
				t.Fatal(err)
			}
			got := classifyHandshake(target, p, "15s", tt.err)
			if !errors.Is(got, tt.want) {
				t.Fatalf("classifyHandshake() = %v, want %v", got, tt.want)
			}
			if !strings.Contains(got.Error(), tt.wantText) {
				t.Errorf("error %q lacks %q", got, tt.wantText)
			}
			if retryable(got) != tt.wantRetry {
				t.Errorf("retryable(%v) = %v, want %v", got, !tt.wantRetry, tt.wantRetry)
			}
		})
	}
}

func TestCtxError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cause := classifyDial(Target{Node: "n1", Address: "a", Port: 22}, "1s", opErr(syscall.ECONNREFUSED))
	err := ctxError(Target{Node: "n1", Address: "a", Port: 22}, "connect", ctx, cause)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrUnreachable) {
		t.Fatalf("ctxError = %v: want both the context's error and the cause", err)
	}
}
