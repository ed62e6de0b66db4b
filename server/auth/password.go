package auth

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"golang.org/x/crypto/bcrypt"
)

// passwordDigestLen is the length of a SHA-1 hex digest, the form in
// which singlecloud's clients send passwords.
const passwordDigestLen = 2 * sha1.Size

// msgPasswordDigest tells a client how to send a password.
const msgPasswordDigest = "must be the SHA-1 hex digest of the password (40 lowercase hex characters), as singlecloud's clients send it"

// PasswordDigest returns the SHA-1 hex digest of a plaintext password: the
// form the API expects in login, create and resetPassword bodies.
func PasswordDigest(plain string) string {
	sum := sha1.Sum([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// checkDigest reports whether s looks like a PasswordDigest result.
func checkDigest(field, s string) error {
	if len(s) != passwordDigestLen {
		return &FieldError{Field: field, Message: msgPasswordDigest}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return &FieldError{Field: field, Message: msgPasswordDigest}
		}
	}
	return nil
}

// hashDigest bcrypts a password digest for storage.
func hashDigest(digest string, cost int) ([]byte, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(digest), cost)
	if err != nil {
		return nil, fmt.Errorf("hash password: %w", err)
	}
	return h, nil
}

// digestMatches reports whether digest is the one hash was made from.
func digestMatches(hash []byte, digest string) bool {
	return bcrypt.CompareHashAndPassword(hash, []byte(digest)) == nil
}
