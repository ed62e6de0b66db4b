package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/zdnscloud/singlecloud/storage"
)

// TokenLifetime is how long an issued token is valid: a working day and
// then some, as singlecloud's clients expect to log in once a day.
const TokenLifetime = 24 * time.Hour

// SettingJWTSecret is the storage.BucketSettings key holding the install's
// token signing secret, sealed with the database's key and bound to this
// row: a copy of the database file without the key file cannot sign a
// token.
const SettingJWTSecret = "jwtSecret.sealed"

// settingPlainJWTSecret is where singlecloud kept the signing secret
// unsealed before. A secret found there was readable by anyone with a copy
// of the file, so it is deleted, never sealed: a new secret replaces it
// and every token signed with the old one stops working.
const settingPlainJWTSecret = "jwtSecret"

// secretLen is the size of the HS256 signing secret: 256 bits, the size of
// the SHA-256 output, as RFC 7518 §3.2 asks for.
const secretLen = 32

// tokenIssuer is the iss claim of every token, checked on verify.
const tokenIssuer = "singlecloud"

// Tokens issues and verifies the API's bearer tokens: JWTs signed with
// HS256 under a random secret created once per install and kept sealed in
// the Store, so that tokens survive restarts.
type Tokens struct {
	secret []byte
	now    func() time.Time
	parser *jwt.Parser
}

// SealedStore is a Store with the Sealer of its key file, which seals the
// values auth keeps secret (the signing secret, token stamps).
// *storage.Bolt is one.
type SealedStore interface {
	storage.Store
	Sealer() storage.Sealer
}

// NewTokens loads the signing secret from store, creating it on first use
// (atomically: concurrent first starts agree on one secret). A secret left
// unsealed by an older singlecloud is deleted and replaced, so tokens
// issued before this version must be renewed by logging in again. clock
// gives the time for issuing and checking expiry; nil means time.Now.
func NewTokens(store SealedStore, clock func() time.Time) (*Tokens, error) {
	if store == nil || store.Sealer() == nil {
		return nil, errors.New("new tokens: a store with a sealer is required")
	}
	if clock == nil {
		clock = time.Now
	}
	secret, err := loadSecret(store)
	if err != nil {
		return nil, err
	}
	return newTokens(secret, clock), nil
}

// NewTokensReader returns the Tokens of the signing secret in r, which an
// elected replica created: a follower verifies tokens with it from its
// copy of the store. It never creates a secret; with none stored yet it
// fails with storage.ErrNotFound.
func NewTokensReader(r storage.Reader, sealer storage.Sealer, clock func() time.Time) (*Tokens, error) {
	if r == nil || sealer == nil {
		return nil, errors.New("new tokens: a reader and a sealer are required")
	}
	if clock == nil {
		clock = time.Now
	}
	sealed, err := r.Get(storage.BucketSettings, SettingJWTSecret)
	if err != nil {
		return nil, fmt.Errorf("read setting %s: %w", SettingJWTSecret, err)
	}
	secret, err := openSecret(sealed, sealer)
	if err != nil {
		return nil, err
	}
	return newTokens(secret, clock), nil
}

// openSecret opens the stored signing secret.
func openSecret(sealed []byte, sealer storage.Sealer) ([]byte, error) {
	b, err := sealer.Open(sealed, storage.AAD(storage.BucketSettings, SettingJWTSecret))
	if err != nil {
		return nil, fmt.Errorf("open setting %s: %w", SettingJWTSecret, err)
	}
	if len(b) < secretLen {
		return nil, fmt.Errorf("setting %s holds %d bytes, want %d: the database is corrupt", SettingJWTSecret, len(b), secretLen)
	}
	return b, nil
}

func newTokens(secret []byte, clock func() time.Time) *Tokens {
	t := &Tokens{secret: secret, now: clock}
	t.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
	)
	return t
}

// Claims is what a verified token says: whose it is, the user's token
// stamp when it was issued (see User.TokenStamp), and when it expires
// (the server ends a user's open streams then).
type Claims struct {
	User    string
	Stamp   string
	Expires time.Time
}

// tokenClaims is the JWT payload.
type tokenClaims struct {
	jwt.RegisteredClaims
	Stamp string `json:"stamp,omitempty"`
}

// Issue returns a token naming user and carrying the user's current token
// stamp, valid for TokenLifetime.
func (t *Tokens) Issue(user, stamp string) (string, error) {
	if user == "" {
		return "", errors.New("issue token: empty user name")
	}
	now := t.now()
	claims := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   user,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(TokenLifetime)),
		},
		Stamp: stamp,
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sign token for user %s: %w", user, err)
	}
	return s, nil
}

// Verify checks a token's signature, algorithm (HS256 only), issuer and
// times, and returns what it says. It fails with ErrExpiredToken for a
// token past its expiry and ErrInvalidToken for anything else. Whether
// the stamp is still the user's is the caller's check.
func (t *Tokens) Verify(token string) (Claims, error) {
	var claims tokenClaims
	_, err := t.parser.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return t.secret, nil })
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, ErrExpiredToken
	case err != nil:
		// jwt's text says what is wrong with the token (never the secret).
		return Claims{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	case claims.Subject == "":
		return Claims{}, fmt.Errorf("%w: the token names no user", ErrInvalidToken)
	}
	// The parser requires an expiry (WithExpirationRequired).
	return Claims{User: claims.Subject, Stamp: claims.Stamp, Expires: claims.ExpiresAt.Time}, nil
}

// loadSecret reads and opens the signing secret, creating and sealing a
// new one in the same transaction when absent.
func loadSecret(store SealedStore) ([]byte, error) {
	sealer := store.Sealer()
	aad := storage.AAD(storage.BucketSettings, SettingJWTSecret)
	var secret []byte
	err := store.Update(func(tx storage.Tx) error {
		sealed, err := tx.Get(storage.BucketSettings, SettingJWTSecret)
		if err == nil {
			secret, err = openSecret(sealed, sealer)
			return err
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read setting %s: %w", SettingJWTSecret, err)
		}
		if err := tx.Delete(storage.BucketSettings, settingPlainJWTSecret); err != nil {
			return fmt.Errorf("delete the unsealed token secret: %w", err)
		}
		b := make([]byte, secretLen)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("generate token secret: %w", err)
		}
		if sealed, err = sealer.Seal(b, aad); err != nil {
			return fmt.Errorf("seal setting %s: %w", SettingJWTSecret, err)
		}
		if err := tx.Put(storage.BucketSettings, SettingJWTSecret, sealed); err != nil {
			return fmt.Errorf("save setting %s: %w", SettingJWTSecret, err)
		}
		secret = b
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load token secret: %w", err)
	}
	return secret, nil
}
