package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestDialTrustOnFirstUseThenPin(t *testing.T) {
	h := startHosts(t, 1)[0]
	ctx := testContext(t)
	d, err := NewDialer(fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	target := targetFor(t, h)

	// First contact records the node's key.
	c, err := d.Dial(ctx, target)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	got := c.HostKey()
	c.Close()
	if want := FormatHostKey(h.HostPublicKey); got != want {
		t.Fatalf("HostKey() = %q, want the host's key %q", got, want)
	}

	// The recorded key, pinned, is accepted.
	target.HostKey = got
	c, err = d.Dial(ctx, target)
	if err != nil {
		t.Fatalf("Dial with the recorded pin: %v", err)
	}
	if c.HostKey() != got {
		t.Errorf("HostKey() changed under the pin")
	}
	c.Close()

	// Another key, pinned, is refused at once (no retries).
	wrong := FormatHostKey(testSigner(t).PublicKey())
	target.HostKey = wrong
	start := time.Now()
	_, err = d.Dial(ctx, target)
	var mismatch *HostKeyMismatchError
	if !errors.As(err, &mismatch) || !errors.Is(err, ErrHostKeyMismatch) {
		t.Fatalf("Dial with a wrong pin = %v, want *HostKeyMismatchError", err)
	}
	if mismatch.Node != h.Name || mismatch.Got != fingerprint(t, got) || mismatch.Want != fingerprint(t, wrong) {
		t.Errorf("mismatch %+v: want node %s, got %s, want %s", mismatch, h.Name, fingerprint(t, got), fingerprint(t, wrong))
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("a mismatch took %s: it must not be retried", time.Since(start))
	}
}

func fingerprint(t *testing.T, authorizedKey string) string {
	t.Helper()
	k, err := ParseHostKey(authorizedKey)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(k)
}

func TestDialFailures(t *testing.T) {
	h := startHosts(t, 1)[0]
	// An address on the hosts' bridge that no host has: ARP gets no
	// answer, so the connect hangs until the dial timeout.
	blackhole := h.Address[:strings.LastIndex(h.Address, ".")] + ".250"
	silent := silentListener(t)

	tests := []struct {
		name     string
		target   func(Target) Target
		opts     Options
		want     error
		wantHint string
		atMost   time.Duration
	}{
		{
			name:   "wrong client key",
			target: func(tg Target) Target { tg.Signer = testSigner(t); return tg },
			opts:   fastOptions(),
			want:   ErrAuthFailed, wantHint: "add the cluster's public key to ~root/.ssh/authorized_keys on " + h.Name,
			atMost: 2 * time.Second,
		},
		{
			name:   "closed port",
			target: func(tg Target) Target { tg.Port = 2222; return tg },
			opts:   fastOptions(),
			want:   ErrUnreachable, wantHint: "nothing accepts connections on port 2222 of " + h.Name,
			atMost: 2 * time.Second,
		},
		{
			name:   "blackholed address",
			target: func(tg Target) Target { tg.Address = blackhole; return tg },
			opts:   Options{DialTimeout: 300 * time.Millisecond, DialAttempts: 2, RetryBackoff: 50 * time.Millisecond},
			want:   ErrUnreachable, wantHint: "no answer within 300ms",
			// two attempts of 300 ms and one backoff
			atMost: 1500 * time.Millisecond,
		},
		{
			name: "port that never speaks SSH",
			target: func(tg Target) Target {
				host, port, _ := net.SplitHostPort(silent)
				tg.Address = host
				fmt.Sscan(port, &tg.Port)
				return tg
			},
			opts: Options{HandshakeTimeout: 300 * time.Millisecond, DialAttempts: 2, RetryBackoff: 50 * time.Millisecond},
			want: ErrHandshake, wantHint: "did not complete within 300ms",
			atMost: 1500 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDialer(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			c, err := d.Dial(testContext(t), tt.target(targetFor(t, h)))
			elapsed := time.Since(start)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			var ne *NodeError
			if !errors.Is(err, tt.want) || !errors.As(err, &ne) {
				t.Fatalf("Dial = %v, want a *NodeError matching %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantHint) {
				t.Errorf("error %q lacks the hint %q", err, tt.wantHint)
			}
			if elapsed > tt.atMost {
				t.Errorf("Dial took %s, want at most %s", elapsed, tt.atMost)
			}
		})
	}
}

// silentListener accepts TCP connections and never says anything.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return l.Addr().String()
}

func TestDialCancel(t *testing.T) {
	h := startHosts(t, 1)[0]
	blackhole := h.Address[:strings.LastIndex(h.Address, ".")] + ".251"
	target := targetFor(t, h)
	target.Address = blackhole
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Dial(ctx, target) // defaults: 10 s per attempt
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Dial = %v, want context.Canceled", err)
	}
	if !strings.Contains(err.Error(), h.Name) {
		t.Errorf("error %q does not name the node", err)
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("Dial returned %s after the cancel", elapsed-200*time.Millisecond)
	}
}
