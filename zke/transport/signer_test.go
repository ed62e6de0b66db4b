package transport

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestParsePrivateKey(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	encrypted, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	plainPEM := pem.EncodeToMemory(plain)
	encPEM := pem.EncodeToMemory(encrypted)
	// A PEM whose body is cut: the parser fails on the key bytes.
	cut := bytes.Clone(plainPEM[:len(plainPEM)/2])
	cut = append(cut, "\n-----END OPENSSH PRIVATE KEY-----\n"...)
	notAKey := pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: []byte("zkesecretbytes-not-a-key")})

	tests := []struct {
		name     string
		in       []byte
		wantErr  bool
		wantText string
	}{
		{name: "unencrypted openssh key", in: plainPEM},
		{name: "encrypted key", in: encPEM, wantErr: true, wantText: "passphrase"},
		{name: "empty", in: nil, wantErr: true, wantText: "empty"},
		{name: "garbage", in: []byte("hello, I am not a key"), wantErr: true, wantText: "not a private key"},
		{name: "truncated", in: cut, wantErr: true, wantText: "not a private key"},
		{name: "wrong body", in: notAKey, wantErr: true, wantText: "not a private key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePrivateKey(tt.in)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("ParsePrivateKey() error = %v", err)
				}
				if s.PublicKey().Type() != ssh.KeyAlgoED25519 {
					t.Fatalf("key type %s", s.PublicKey().Type())
				}
				return
			}
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParsePrivateKey() error = %v, want ErrInvalidKey", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantText) {
				t.Errorf("error %q lacks %q", msg, tt.wantText)
			}
			// No key material: no line of the input's body, no secret bytes.
			for _, line := range strings.Split(string(tt.in), "\n") {
				if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
					t.Errorf("error %q echoes the key line %q", msg, line)
				}
			}
			if strings.Contains(msg, "zkesecretbytes") || strings.Contains(msg, base64.StdEncoding.EncodeToString([]byte("zkesecretbytes"))[:12]) {
				t.Errorf("error %q echoes the input", msg)
			}
		})
	}
}
