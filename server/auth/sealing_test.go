package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	bolt "go.etcd.io/bbolt"
	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// TestStolenDatabaseCannotForgeToken: with a copy of the database file
// and without its key file, an attacker finds neither the signing secret
// nor any token stamp, and no value of the file signs a token the server
// accepts.
func TestStolenDatabaseCannotForgeToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "singlecloud.db")
	db, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	users, err := NewUsers(db, UsersOptions{HashCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.EnsureAdmin("admin password"); err != nil {
		t.Fatal(err)
	}
	admin, err := users.Get(AdminName)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := NewTokens(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := bytes.Clone(tokens.secret)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(file, secret) || bytes.Contains(file, []byte(hex.EncodeToString(secret))) {
		t.Fatal("the token signing secret is in the database file in clear")
	}
	if bytes.Contains(file, []byte(admin.TokenStamp)) {
		t.Fatal("the admin's token stamp is in the database file in clear")
	}

	// The attacker's copy: the file alone, in another directory.
	stolen := filepath.Join(t.TempDir(), "stolen.db")
	if err := os.WriteFile(stolen, file, 0o600); err != nil {
		t.Fatal(err)
	}
	candidates := stolenValues(t, stolen)
	if len(candidates) == 0 {
		t.Fatal("read nothing from the stolen copy")
	}

	db2, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	server, err := NewTokens(db2, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, key := range candidates {
		for _, stamp := range append([]string{""}, stringsOf(candidates)...) {
			claims := tokenClaims{
				RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, Subject: AdminName,
					IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
				Stamp: stamp,
			}
			forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := server.Verify(forged); !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("a token signed with a value of the stolen file verified (err %v)", err)
			}
		}
	}
}

// stolenValues returns every value of the settings and users buckets of
// the database file at path, and every string field of the user records:
// what an attacker with the file could try as the signing secret or stamp.
func stolenValues(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var out [][]byte
	err = raw.View(func(tx *bolt.Tx) error {
		for _, b := range []storage.Bucket{storage.BucketSettings, storage.BucketUsers} {
			err := tx.Bucket([]byte(b)).ForEach(func(_, v []byte) error {
				out = append(out, bytes.Clone(v))
				var fields map[string]any
				if json.Unmarshal(v, &fields) == nil {
					for _, f := range fields {
						if s, ok := f.(string); ok {
							out = append(out, []byte(s))
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func stringsOf(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestUnsealedSecretsOfOlderReleaseReplaced: a database written before
// sealing has its signing secret and token stamps in clear; they are
// replaced (never sealed as they are), and tokens made with them fail.
func TestUnsealedSecretsOfOlderReleaseReplaced(t *testing.T) {
	db := storagetest.Open(t)
	oldSecret := bytes.Repeat([]byte{7}, secretLen)
	oldStamp := "00112233445566778899aabbccddeeff"
	hash, err := bcrypt.GenerateFromPassword([]byte(PasswordDigest("pw")), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	oldRow, _ := json.Marshal(map[string]any{"name": "bob", "passwordHash": hash, "projects": []Project{}, "createdAt": time.Now(), "tokenStamp": oldStamp})
	if err := db.Put(storage.BucketSettings, settingPlainJWTSecret, oldSecret); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(storage.BucketUsers, "bob", oldRow); err != nil {
		t.Fatal(err)
	}

	users, err := NewUsers(db, UsersOptions{HashCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := users.Get("bob"); err != nil || u.TokenStamp != oldStamp {
		t.Fatalf("before migration Get = %+v, %v; want the old stamp readable", u, err)
	}
	n, err := users.SealLegacyStamps()
	if err != nil || n != 1 {
		t.Fatalf("SealLegacyStamps = %d, %v; want 1 user changed", n, err)
	}
	if n, err := users.SealLegacyStamps(); err != nil || n != 0 {
		t.Fatalf("second SealLegacyStamps = %d, %v; want nothing left to do", n, err)
	}
	row, err := db.Get(storage.BucketUsers, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(row, []byte(`"tokenStamp"`)) || bytes.Contains(row, []byte(oldStamp)) {
		t.Fatalf("migrated row still holds a clear stamp: %s", row)
	}
	bob, err := users.Authenticate("bob", PasswordDigest("pw"))
	if err != nil || bob.TokenStamp == oldStamp || bob.TokenStamp == "" {
		t.Fatalf("after migration: %+v, %v; want bob with a new stamp", bob, err)
	}

	tokens, err := NewTokens(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(tokens.secret, oldSecret) {
		t.Fatal("the signing secret that was stored in clear is still used")
	}
	if _, err := db.Get(storage.BucketSettings, settingPlainJWTSecret); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the clear signing secret is still stored (err %v)", err)
	}
	now := time.Now()
	old, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{Issuer: tokenIssuer, Subject: "bob",
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
		Stamp: oldStamp,
	}).SignedString(oldSecret)
	if _, err := tokens.Verify(old); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("a token signed with the old clear secret: err %v, want ErrInvalidToken", err)
	}
}

// TestSealedStampBoundToItsUser: a sealed stamp copied from one user's row
// into another's does not open there.
func TestSealedStampBoundToItsUser(t *testing.T) {
	u, db := newTestUsers(t)
	for _, name := range []string{"ann", "bob"} {
		if _, err := u.Create(User{Name: name}, PasswordDigest("pw")); err != nil {
			t.Fatal(err)
		}
	}
	rows := map[string]map[string]json.RawMessage{}
	for _, name := range []string{"ann", "bob"} {
		b, err := db.Get(storage.BucketUsers, name)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		rows[name] = m
	}
	rows["bob"]["sealedTokenStamp"] = rows["ann"]["sealedTokenStamp"]
	swapped, _ := json.Marshal(rows["bob"])
	if err := db.Put(storage.BucketUsers, "bob", swapped); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Get("bob"); !errors.Is(err, storage.ErrDecrypt) {
		t.Fatalf("Get of bob carrying ann's sealed stamp: err %v, want ErrDecrypt", err)
	}
	if _, err := u.Get("ann"); err != nil {
		t.Fatalf("ann's own row: %v", err)
	}
}
