package validation

import (
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// sshKeyProblem says why key cannot be used by zke to log in to the nodes,
// or returns "" when it can: it must be an unencrypted PEM private key that
// golang.org/x/crypto/ssh parses (OpenSSH, PKCS#1, PKCS#8 or SEC 1; RSA,
// ECDSA or Ed25519). The reason never quotes the key, nor the parser's
// message, only the PEM block type.
func sshKeyProblem(key string) string {
	if key == "" {
		return "is required: paste the private key zke logs in to the nodes with"
	}
	block, _ := pem.Decode([]byte(key))
	if block == nil {
		return "does not look like a PEM private key; paste the whole file, from -----BEGIN ... PRIVATE KEY----- to -----END ... PRIVATE KEY-----"
	}
	if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
		return fmt.Sprintf("holds a %q block, not a private key; paste the private key file (like ~/.ssh/id_ed25519), not a public key or a certificate", block.Type)
	}
	_, err := ssh.ParsePrivateKey([]byte(key))
	if err == nil {
		return ""
	}
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return "is encrypted with a passphrase, which zke cannot type; give an unencrypted key (ssh-keygen -p -N '' -f <file> removes the passphrase from a copy)"
	}
	return fmt.Sprintf("holds a %q block that cannot be used as an SSH private key; give an unencrypted RSA, ECDSA or Ed25519 private key, the whole file unchanged", block.Type)
}
