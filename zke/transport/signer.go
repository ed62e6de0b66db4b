package transport

import (
	"errors"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// ParsePrivateKey turns the cluster's private key (PEM or OpenSSH format)
// into a signer for Target.Signer. An encrypted key or anything that is not
// a key is an ErrInvalidKey error that says what to do; the message never
// contains any of the key's bytes.
func ParsePrivateKey(pemBytes []byte) (ssh.Signer, error) {
	if len(pemBytes) == 0 {
		return nil, fmt.Errorf("%w: the key is empty: give the cluster's unencrypted private key in PEM or OpenSSH format", ErrInvalidKey)
	}
	signer, err := ssh.ParsePrivateKey(pemBytes)
	if err == nil {
		return signer, nil
	}
	var pass *ssh.PassphraseMissingError
	if errors.As(err, &pass) {
		return nil, fmt.Errorf("%w: the key is protected by a passphrase, which zke cannot type: "+
			"give an unencrypted key (remove the passphrase with ssh-keygen -p -N '' -f <keyfile>)", ErrInvalidKey)
	}
	// The parser's own message is not repeated: some of them quote the
	// input they failed on.
	return nil, fmt.Errorf("%w: not a private key in PEM or OpenSSH format (an RSA, ECDSA or Ed25519 key such as ssh-keygen writes): check that the whole file was pasted", ErrInvalidKey)
}
