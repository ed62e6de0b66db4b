package auth

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestTokensIssueVerify(t *testing.T) {
	db := storagetest.Open(t)
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tokens, err := NewTokens(db, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Issue("alice", "s1")
	if err != nil {
		t.Fatal(err)
	}
	expires := clock.Now().Add(TokenLifetime)
	if c, err := tokens.Verify(tok); err != nil || c.User != "alice" || c.Stamp != "s1" || !c.Expires.Equal(expires) {
		t.Fatalf("Verify = %+v, %v; want alice, s1, expiring at %s", c, err, expires)
	}
	clock.Add(TokenLifetime - time.Second)
	if _, err := tokens.Verify(tok); err != nil {
		t.Fatalf("Verify just before expiry: %v", err)
	}
	clock.Add(2 * time.Second)
	_, err = tokens.Verify(tok)
	if !errors.Is(err, ErrExpiredToken) || errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify after expiry = %v, want ErrExpiredToken only", err)
	}
}

func TestTokensReject(t *testing.T) {
	db := storagetest.Open(t)
	now := time.Now()
	tokens, err := NewTokens(db, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	secret := tokens.secret
	valid := jwt.RegisteredClaims{
		Issuer:    tokenIssuer,
		Subject:   "alice",
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}
	sign := func(m jwt.SigningMethod, key any, c jwt.Claims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good, _ := tokens.Issue("alice", "")
	noExp, noSub, otherIss, future := valid, valid, valid, valid
	noExp.ExpiresAt = nil
	noSub.Subject = ""
	otherIss.Issuer = "someone-else"
	future.IssuedAt = jwt.NewNumericDate(now.Add(time.Hour))
	tests := []struct {
		name  string
		token string
	}{
		{"empty", ""},
		{"garbage", "not.a.token"},
		{"other secret", sign(jwt.SigningMethodHS256, []byte(strings.Repeat("x", 32)), valid)},
		{"HS512 with our secret", sign(jwt.SigningMethodHS512, secret, valid)},
		{"alg none", sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid)},
		{"no expiry", sign(jwt.SigningMethodHS256, secret, noExp)},
		{"no subject", sign(jwt.SigningMethodHS256, secret, noSub)},
		{"other issuer", sign(jwt.SigningMethodHS256, secret, otherIss)},
		{"issued in the future", sign(jwt.SigningMethodHS256, secret, future)},
		{"tampered", good[:len(good)-2] + "xx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := tokens.Verify(tt.token); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Verify = %+v, %v; want ErrInvalidToken", c, err)
			}
		})
	}
	if _, err := tokens.Verify(sign(jwt.SigningMethodHS256, secret, valid)); err != nil {
		t.Fatalf("control token rejected: %v", err)
	}
}

func TestTokensSecretPersists(t *testing.T) {
	db := storagetest.Open(t)
	first, err := NewTokens(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := first.Issue("alice", "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := NewTokens(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := second.Verify(tok); err != nil || c.User != "alice" {
		t.Fatalf("token from an earlier start: %+v, %v", c, err)
	}
	other, err := NewTokens(storagetest.Open(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Verify(tok); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("token from another install: %v, want ErrInvalidToken", err)
	}
}

func TestTokensCorruptSecret(t *testing.T) {
	db := storagetest.Open(t)
	if err := db.Put(storage.BucketSettings, SettingJWTSecret, []byte("short")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTokens(db, nil); err == nil || !strings.Contains(err.Error(), SettingJWTSecret) {
		t.Fatalf("NewTokens with a short secret = %v, want an error naming %s", err, SettingJWTSecret)
	}
}

func TestTokensConcurrentFirstStartAgree(t *testing.T) {
	db := storagetest.Open(t)
	const n = 6
	all := make([]*Tokens, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all[i], errs[i] = NewTokens(db, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("NewTokens %d: %v", i, err)
		}
	}
	tok, err := all[0].Issue("alice", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, tk := range all {
		if _, err := tk.Verify(tok); err != nil {
			t.Fatalf("instance %d rejects a token of instance 0: %v", i, err)
		}
	}
}
