// Package auth owns singlecloud's users and API tokens: user records with
// bcrypt-hashed passwords and project grants in the Store, and HS256 JWTs
// signed with a per-install secret. It knows nothing of HTTP.
//
// Passwords travel in the form singlecloud's clients send them: the SHA-1
// hex digest of the password (see PasswordDigest). Only a bcrypt hash of
// that digest is stored; no password or hash ever leaves this package.
package auth

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/storage"
)

// AdminName is the built-in administrator: created at first start, never
// deletable, the only user allowed to change anything.
const AdminName = "admin"

// Project grants a user read access to a cluster (and, for clients that
// use it, one namespace of it; empty means all).
type Project struct {
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
}

// User is a user as callers see it: never with its password.
type User struct {
	Name      string
	Projects  []Project
	CreatedAt time.Time
	// TokenStamp is a random value that changes whenever the password
	// is set (and when a user is created, so that a deleted user's
	// tokens do not come back with a new user of the same name). Tokens
	// carry the stamp they were issued with; one carrying another stamp
	// is revoked.
	TokenStamp string
}

// Users stores users in storage.BucketUsers. It is safe for concurrent use;
// every read-modify-write runs in one Store transaction.
type Users struct {
	store storage.Store
	now   func() time.Time
	cost  int // bcrypt cost; lowered only by this package's tests

	dummyOnce sync.Once
	dummy     []byte // a hash compared against for unknown users
}

// record is the stored form of a user.
type record struct {
	Name         string    `json:"name"`
	PasswordHash []byte    `json:"passwordHash"`
	Projects     []Project `json:"projects"`
	CreatedAt    time.Time `json:"createdAt"`
	TokenStamp   string    `json:"tokenStamp,omitempty"`
}

func (r record) user() User {
	projects := append([]Project{}, r.Projects...)
	return User{Name: r.Name, Projects: projects, CreatedAt: r.CreatedAt, TokenStamp: r.TokenStamp}
}

// newTokenStamp returns a fresh random token stamp.
func newTokenStamp() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token stamp: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// UsersOptions tunes Users; the zero value is the production setting.
type UsersOptions struct {
	// HashCost is the bcrypt cost of new password hashes; 0 means
	// bcrypt.DefaultCost. Tests use bcrypt.MinCost to stay fast.
	HashCost int
	// Clock stamps CreatedAt; nil means time.Now.
	Clock func() time.Time
}

// NewUsers returns the users kept in store, with the default options.
func NewUsers(store storage.Store) *Users {
	return &Users{store: store, now: time.Now, cost: bcrypt.DefaultCost}
}

// NewUsersWithOptions is NewUsers with tuning; it rejects a cost bcrypt
// does not support.
func NewUsersWithOptions(store storage.Store, opts UsersOptions) (*Users, error) {
	u := NewUsers(store)
	if opts.HashCost != 0 {
		if opts.HashCost < bcrypt.MinCost || opts.HashCost > bcrypt.MaxCost {
			return nil, fmt.Errorf("new users: HashCost %d is outside bcrypt's range %d-%d", opts.HashCost, bcrypt.MinCost, bcrypt.MaxCost)
		}
		u.cost = opts.HashCost
	}
	if opts.Clock != nil {
		u.now = opts.Clock
	}
	return u, nil
}

// IsAdmin reports whether name is the administrator.
func (u *Users) IsAdmin(name string) bool { return name == AdminName }

// EnsureAdmin creates the admin user with the given plaintext password if
// it does not exist yet, and reports whether it did. An existing admin
// keeps its password.
func (u *Users) EnsureAdmin(password string) (created bool, err error) {
	if password == "" {
		return false, &FieldError{Field: "password", Message: "the admin password must not be empty"}
	}
	if _, err := u.Get(AdminName); err == nil {
		return false, nil
	} else if !errors.Is(err, ErrNotFound) {
		return false, err
	}
	hash, err := hashDigest(PasswordDigest(password), u.cost)
	if err != nil {
		return false, err
	}
	err = u.store.Update(func(tx storage.Tx) error {
		if _, err := tx.Get(storage.BucketUsers, AdminName); err == nil {
			return nil // created concurrently; keep that one
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read user %s: %w", AdminName, err)
		}
		stamp, err := newTokenStamp()
		if err != nil {
			return err
		}
		created = true
		return putRecord(tx, record{Name: AdminName, PasswordHash: hash, Projects: []Project{}, CreatedAt: u.now().UTC(), TokenStamp: stamp})
	})
	if err != nil {
		return false, fmt.Errorf("create user %s: %w", AdminName, err)
	}
	return created, nil
}

// SetAdminPassword sets the admin's plaintext password, creating the admin
// if needed. It backs --admin-password, which wins on every start.
func (u *Users) SetAdminPassword(password string) error {
	if password == "" {
		return &FieldError{Field: "password", Message: "the admin password must not be empty"}
	}
	hash, err := hashDigest(PasswordDigest(password), u.cost)
	if err != nil {
		return err
	}
	err = u.store.Update(func(tx storage.Tx) error {
		rec, err := getRecord(tx, AdminName)
		if errors.Is(err, ErrNotFound) {
			rec = record{Name: AdminName, Projects: []Project{}, CreatedAt: u.now().UTC()}
		} else if err != nil {
			return err
		}
		if rec.PasswordHash != nil && digestMatches(rec.PasswordHash, PasswordDigest(password)) {
			return nil // unchanged: the admin's tokens stay valid
		}
		if rec.TokenStamp, err = newTokenStamp(); err != nil {
			return err
		}
		rec.PasswordHash = hash
		return putRecord(tx, rec)
	})
	if err != nil {
		return fmt.Errorf("set password of user %s: %w", AdminName, err)
	}
	return nil
}

// Authenticate checks a user's password digest. An unknown user and a wrong
// password both give ErrBadCredentials, and cost about the same time.
// A password not in digest form is a field error (ErrInvalid), so that a
// client sending plaintext learns why it cannot log in.
func (u *Users) Authenticate(name, digest string) (User, error) {
	if err := checkDigest("password", digest); err != nil {
		return User{}, err
	}
	rec, err := u.load(name)
	if errors.Is(err, ErrNotFound) {
		digestMatches(u.dummyHash(), digest)
		return User{}, fmt.Errorf("log in as %s: %w", name, ErrBadCredentials)
	}
	if err != nil {
		return User{}, err
	}
	if !digestMatches(rec.PasswordHash, digest) {
		return User{}, fmt.Errorf("log in as %s: %w", name, ErrBadCredentials)
	}
	return rec.user(), nil
}

// Create adds a user with its password digest. It fails with ErrDuplicate
// if the name is taken and with field errors (ErrInvalid) listing every
// broken rule.
func (u *Users) Create(user User, digest string) (User, error) {
	if err := errors.Join(checkName(user.Name), checkDigest("password", digest), checkProjects(user.Projects)); err != nil {
		return User{}, err
	}
	hash, err := hashDigest(digest, u.cost)
	if err != nil {
		return User{}, err
	}
	stamp, err := newTokenStamp()
	if err != nil {
		return User{}, err
	}
	rec := record{Name: user.Name, PasswordHash: hash, Projects: append([]Project{}, user.Projects...), CreatedAt: u.now().UTC(), TokenStamp: stamp}
	err = u.store.Update(func(tx storage.Tx) error {
		if _, err := tx.Get(storage.BucketUsers, user.Name); err == nil {
			return fmt.Errorf("user %s: %w", user.Name, ErrDuplicate)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read user %s: %w", user.Name, err)
		}
		return putRecord(tx, rec)
	})
	if err != nil {
		return User{}, err
	}
	return rec.user(), nil
}

// Get returns one user, or ErrNotFound.
func (u *Users) Get(name string) (User, error) {
	rec, err := u.load(name)
	if err != nil {
		return User{}, err
	}
	return rec.user(), nil
}

// List returns every user sorted by name.
func (u *Users) List() ([]User, error) {
	kvs, err := u.store.List(storage.BucketUsers)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	users := make([]User, 0, len(kvs))
	for _, kv := range kvs {
		rec, err := decodeRecord(kv.Key, kv.Value)
		if err != nil {
			return nil, err
		}
		users = append(users, rec.user())
	}
	return users, nil
}

// Update replaces a user's projects; nothing else of a user changes here.
func (u *Users) Update(user User) (User, error) {
	if err := checkProjects(user.Projects); err != nil {
		return User{}, err
	}
	var out record
	err := u.store.Update(func(tx storage.Tx) error {
		rec, err := getRecord(tx, user.Name)
		if err != nil {
			return err
		}
		rec.Projects = append([]Project{}, user.Projects...)
		out = rec
		return putRecord(tx, rec)
	})
	if err != nil {
		return User{}, err
	}
	return out.user(), nil
}

// Delete removes a user. The admin cannot be deleted (ErrPermissionDenied).
func (u *Users) Delete(name string) error {
	if name == AdminName {
		return fmt.Errorf("user %s cannot be deleted: %w", AdminName, ErrPermissionDenied)
	}
	return u.store.Update(func(tx storage.Tx) error {
		if _, err := getRecord(tx, name); err != nil {
			return err
		}
		if err := tx.Delete(storage.BucketUsers, name); err != nil {
			return fmt.Errorf("delete user %s: %w", name, err)
		}
		return nil
	})
}

// ResetPassword changes a user's own password: the old digest must match
// (ErrBadCredentials otherwise).
func (u *Users) ResetPassword(name, oldDigest, newDigest string) error {
	if err := checkDigest("password", newDigest); err != nil {
		return err
	}
	if oldDigest == "" {
		return &FieldError{Field: "oldPassword", Message: "is required to change your own password"}
	}
	return u.setPassword(name, newDigest, func(rec record) error {
		if !digestMatches(rec.PasswordHash, oldDigest) {
			return fmt.Errorf("reset password of user %s: the old password is wrong: %w", name, ErrBadCredentials)
		}
		return nil
	})
}

// SetPassword changes any user's password without the old one; callers
// allow it to the admin only.
func (u *Users) SetPassword(name, newDigest string) error {
	if err := checkDigest("password", newDigest); err != nil {
		return err
	}
	return u.setPassword(name, newDigest, func(record) error { return nil })
}

// setPassword hashes newDigest, then replaces the hash of name if check
// accepts the stored record, all in one transaction. A new token stamp
// revokes every token issued before.
func (u *Users) setPassword(name, newDigest string, check func(record) error) error {
	hash, err := hashDigest(newDigest, u.cost)
	if err != nil {
		return err
	}
	return u.store.Update(func(tx storage.Tx) error {
		rec, err := getRecord(tx, name)
		if err != nil {
			return err
		}
		if err := check(rec); err != nil {
			return err
		}
		if rec.TokenStamp, err = newTokenStamp(); err != nil {
			return err
		}
		rec.PasswordHash = hash
		return putRecord(tx, rec)
	})
}

func (u *Users) load(name string) (record, error) {
	return getRecord(u.store, name)
}

// dummyHash is compared against when a login names an unknown user, so
// that the answer takes as long as for a wrong password.
func (u *Users) dummyHash() []byte {
	u.dummyOnce.Do(func() {
		u.dummy, _ = bcrypt.GenerateFromPassword([]byte(PasswordDigest("singlecloud")), u.cost)
	})
	return u.dummy
}

func getRecord(r storage.Reader, name string) (record, error) {
	b, err := r.Get(storage.BucketUsers, name)
	if errors.Is(err, storage.ErrNotFound) {
		return record{}, fmt.Errorf("user %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return record{}, fmt.Errorf("read user %s: %w", name, err)
	}
	return decodeRecord(name, b)
}

func decodeRecord(name string, b []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return record{}, fmt.Errorf("user %s: stored record is corrupt: %w", name, err)
	}
	return rec, nil
}

func putRecord(tx storage.Tx, rec record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode user %s: %w", rec.Name, err)
	}
	if err := tx.Put(storage.BucketUsers, rec.Name, b); err != nil {
		return fmt.Errorf("save user %s: %w", rec.Name, err)
	}
	return nil
}
