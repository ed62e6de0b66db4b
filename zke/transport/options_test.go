package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func TestOptionsDefaults(t *testing.T) {
	tests := []struct {
		name    string
		in      Options
		want    Options
		wantErr bool
	}{
		{name: "zero gives defaults", in: Options{}, want: Options{
			DialTimeout: DefaultDialTimeout, HandshakeTimeout: DefaultHandshakeTimeout,
			KeepaliveInterval: DefaultKeepaliveInterval, KeepaliveTimeout: DefaultKeepaliveTimeout,
			DialAttempts: DefaultDialAttempts, RetryBackoff: DefaultRetryBackoff, MaxOutput: DefaultMaxOutput,
		}},
		{name: "set values kept", in: Options{DialTimeout: time.Second, DialAttempts: 1, MaxOutput: 10}, want: Options{
			DialTimeout: time.Second, HandshakeTimeout: DefaultHandshakeTimeout,
			KeepaliveInterval: DefaultKeepaliveInterval, KeepaliveTimeout: DefaultKeepaliveTimeout,
			DialAttempts: 1, RetryBackoff: DefaultRetryBackoff, MaxOutput: 10,
		}},
		{name: "negative timeout", in: Options{DialTimeout: -1}, wantErr: true},
		{name: "negative attempts", in: Options{DialAttempts: -1}, wantErr: true},
		{name: "negative output cap", in: Options{MaxOutput: -1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if (err != nil) != tt.wantErr {
				t.Fatalf("withDefaults() error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func testSigner(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTargetNormalized(t *testing.T) {
	signer := testSigner(t)
	tests := []struct {
		name     string
		in       Target
		wantPort int
		wantUser string
		wantErr  bool
	}{
		{name: "defaults", in: Target{Node: "n1", Address: "10.0.0.5", Signer: signer}, wantPort: 22, wantUser: "root"},
		{name: "explicit", in: Target{Node: "n1", Address: "10.0.0.5", Port: 2222, User: "zke", Signer: signer}, wantPort: 2222, wantUser: "zke"},
		{name: "no node", in: Target{Address: "10.0.0.5", Signer: signer}, wantErr: true},
		{name: "no address", in: Target{Node: "n1", Signer: signer}, wantErr: true},
		{name: "bad port", in: Target{Node: "n1", Address: "10.0.0.5", Port: 70000, Signer: signer}, wantErr: true},
		{name: "no key", in: Target{Node: "n1", Address: "10.0.0.5"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.normalized()
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidTarget) {
					t.Fatalf("normalized() error = %v, want ErrInvalidTarget", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("normalized() error = %v", err)
			}
			if got.Port != tt.wantPort || got.User != tt.wantUser {
				t.Fatalf("normalized() port %d user %q, want %d %q", got.Port, got.User, tt.wantPort, tt.wantUser)
			}
		})
	}
	if got := (Target{Address: "fd00::1", Port: 22}).hostPort(); got != "[fd00::1]:22" {
		t.Errorf("IPv6 hostPort = %q", got)
	}
}
