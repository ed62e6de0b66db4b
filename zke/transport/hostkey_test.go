package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestHostKeyPin(t *testing.T) {
	nodeKey := testSigner(t).PublicKey()
	otherKey := testSigner(t).PublicKey()
	tests := []struct {
		name       string
		pin        string
		presented  ssh.PublicKey
		wantErr    bool
		wantRecord bool
	}{
		{name: "trust on first use records the key", pin: "", presented: nodeKey, wantRecord: true},
		{name: "pinned key matches", pin: FormatHostKey(nodeKey), presented: nodeKey, wantRecord: true},
		{name: "pin with comment and newline", pin: FormatHostKey(nodeKey) + " root@node1\n", presented: nodeKey, wantRecord: true},
		{name: "other key refused", pin: FormatHostKey(otherKey), presented: nodeKey, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newHostKeyPin(Target{Node: "node1", Address: "10.0.0.5", Port: 22, HostKey: tt.pin})
			if err != nil {
				t.Fatal(err)
			}
			err = p.check("10.0.0.5:22", nil, tt.presented)
			if tt.wantErr {
				var mismatch *HostKeyMismatchError
				if !errors.As(err, &mismatch) || !errors.Is(err, ErrHostKeyMismatch) {
					t.Fatalf("check() = %v, want a *HostKeyMismatchError", err)
				}
				if mismatch.Want != ssh.FingerprintSHA256(otherKey) || mismatch.Got != ssh.FingerprintSHA256(nodeKey) {
					t.Errorf("fingerprints want %s got %s", mismatch.Want, mismatch.Got)
				}
				for _, s := range []string{"node1", "10.0.0.5:22", mismatch.Want, mismatch.Got, "ssh-keygen -lf", "pinned host key"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("message %q lacks %q", err, s)
					}
				}
				if p.accepted() != nil {
					t.Errorf("a refused key was recorded")
				}
				return
			}
			if err != nil {
				t.Fatalf("check() = %v", err)
			}
			if got := p.accepted(); tt.wantRecord && (got == nil || FormatHostKey(got) != FormatHostKey(nodeKey)) {
				t.Errorf("accepted() = %v, want the node's key", got)
			}
		})
	}
}

func TestHostKeyPinInvalid(t *testing.T) {
	_, err := newHostKeyPin(Target{Node: "node1", Address: "10.0.0.5", HostKey: "ssh-ed25519 not-base64!"})
	if !errors.Is(err, ErrInvalidTarget) || !strings.Contains(err.Error(), "node1") {
		t.Fatalf("newHostKeyPin(bad pin) = %v, want ErrInvalidTarget naming node1", err)
	}
}

func TestHostKeyAlgorithms(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := func(k any) string {
		s, err := ssh.NewSignerFromKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return FormatHostKey(s.PublicKey())
	}
	tests := []struct {
		name string
		pin  string
		want []string
	}{
		{name: "no pin: library defaults", pin: "", want: nil},
		{name: "ed25519", pin: FormatHostKey(testSigner(t).PublicKey()), want: []string{ssh.KeyAlgoED25519}},
		{name: "rsa: every signature hash", pin: pub(rsaKey), want: []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}},
		{name: "ecdsa", pin: pub(ecKey), want: []string{ssh.KeyAlgoECDSA256}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newHostKeyPin(Target{Node: "n", Address: "a", HostKey: tt.pin})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.algorithms(); !slices.Equal(got, tt.want) {
				t.Fatalf("algorithms() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMismatchFromNegotiation(t *testing.T) {
	pinned := testSigner(t).PublicKey()
	hostKeyNeg := &ssh.AlgorithmNegotiationError{What: "host key", SupportedAlgorithms: []string{"ssh-ed25519"}, RequestedAlgorithms: []string{"rsa-sha2-512"}}
	cipherNeg := &ssh.AlgorithmNegotiationError{What: "client to server cipher"}
	tests := []struct {
		name string
		pin  string
		err  error
		want bool
	}{
		{name: "pinned, host key negotiation failed", pin: FormatHostKey(pinned), err: fmt.Errorf("ssh: handshake failed: %w", hostKeyNeg), want: true},
		{name: "not pinned", pin: "", err: hostKeyNeg, want: false},
		{name: "cipher negotiation", pin: FormatHostKey(pinned), err: cipherNeg, want: false},
		{name: "other error", pin: FormatHostKey(pinned), err: errors.New("EOF"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := newHostKeyPin(Target{Node: "n", Address: "a", HostKey: tt.pin})
			if err != nil {
				t.Fatal(err)
			}
			got := p.mismatchFromNegotiation(tt.err)
			if (got != nil) != tt.want {
				t.Fatalf("mismatchFromNegotiation() = %v, want mismatch %v", got, tt.want)
			}
			if got != nil && (!errors.Is(got, ErrHostKeyMismatch) || !strings.Contains(got.Error(), "rsa-sha2-512")) {
				t.Errorf("mismatch %v should match ErrHostKeyMismatch and name what the node offers", got)
			}
		})
	}
}
