// Package auth owns singlecloud's users and API tokens: user records with
// bcrypt-hashed passwords and project grants in the Store, and HS256 JWTs
// signed with a per-install secret. It knows nothing of HTTP.
//
// Passwords travel in the form singlecloud's clients send them: the SHA-1
// hex digest of the password (see PasswordDigest). Only a bcrypt hash of
// that digest is stored; no password or hash ever leaves this package.
// Token stamps and the signing secret are stored sealed (storage.Sealer),
// each bound to its row.
package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

// Project grants a user read access to a cluster and one namespace of it,
// or every namespace (see AllNamespaces). Cluster is a cluster name (a
// DNS-1123 label); grants to a cluster are dropped when it is deleted.
// Namespace is a DNS-1123 label, or NamespaceAll, as which every spelling
// of "every namespace" is stored.
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
	store  storage.Store
	sealer storage.Sealer
	now    func() time.Time
	cost   int // bcrypt cost; lowered only by this package's tests

	dummyOnce sync.Once
	dummy     []byte // a hash compared against for unknown users

	onReset func(name string)
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
	// OnPasswordReset, if set, is called after ResetPassword or
	// SetPassword (the API's resetPassword) changed name's password:
	// the server learns only the new password's digest there, so a copy
	// of the old plaintext kept elsewhere (the admin password file) is
	// now stale.
	OnPasswordReset func(name string)
}

// NewUsers returns the users kept in store, tuned by opts (the zero value
// is the production setting); it rejects a cost bcrypt does not support.
func NewUsers(store SealedStore, opts UsersOptions) (*Users, error) {
	u := &Users{store: store, sealer: store.Sealer(), now: time.Now, cost: bcrypt.DefaultCost, onReset: opts.OnPasswordReset}
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
		return u.putRecord(tx, record{Name: AdminName, PasswordHash: hash, Projects: []Project{}, CreatedAt: u.now().UTC(), TokenStamp: stamp})
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
		rec, err := u.getRecord(tx, AdminName)
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
		return u.putRecord(tx, rec)
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
	projects, perr := checkProjects(user.Projects)
	if err := errors.Join(checkName(user.Name), checkDigest("password", digest), perr); err != nil {
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
	rec := record{Name: user.Name, PasswordHash: hash, Projects: projects, CreatedAt: u.now().UTC(), TokenStamp: stamp}
	err = u.store.Update(func(tx storage.Tx) error {
		if _, err := tx.Get(storage.BucketUsers, user.Name); err == nil {
			return fmt.Errorf("user %s: %w", user.Name, ErrDuplicate)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read user %s: %w", user.Name, err)
		}
		return u.putRecord(tx, rec)
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
		rec, err := u.decodeRecord(kv.Key, kv.Value)
		if err != nil {
			return nil, err
		}
		users = append(users, rec.user())
	}
	return users, nil
}

// Update replaces a user's projects; nothing else of a user changes here.
func (u *Users) Update(user User) (User, error) {
	projects, err := checkProjects(user.Projects)
	if err != nil {
		return User{}, err
	}
	var out record
	err = u.store.Update(func(tx storage.Tx) error {
		rec, err := u.getRecord(tx, user.Name)
		if err != nil {
			return err
		}
		rec.Projects = projects
		out = rec
		return u.putRecord(tx, rec)
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
		if _, err := u.getRecord(tx, name); err != nil {
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

// setPassword replaces the hash of name by one of newDigest if check
// accepts the stored record. A new token stamp revokes every token issued
// before. The bcrypt work (check's comparison, the new hash) runs outside
// the write transaction, which would otherwise hold the store's only
// writer for a tenth of a second per call; the transaction then writes
// only if the hash and stamp it checked are still stored, and fails with
// ErrConflict if another change came in between.
func (u *Users) setPassword(name, newDigest string, check func(record) error) error {
	seen, err := u.load(name)
	if err != nil {
		return err
	}
	if err := check(seen); err != nil {
		return err
	}
	hash, err := hashDigest(newDigest, u.cost)
	if err != nil {
		return err
	}
	err = u.store.Update(func(tx storage.Tx) error {
		rec, err := u.getRecord(tx, name)
		if err != nil {
			return err
		}
		if !bytes.Equal(rec.PasswordHash, seen.PasswordHash) || rec.TokenStamp != seen.TokenStamp {
			return fmt.Errorf("set password of user %s: its password changed while this request checked it: %w", name, ErrConflict)
		}
		if rec.TokenStamp, err = newTokenStamp(); err != nil {
			return err
		}
		rec.PasswordHash = hash
		return u.putRecord(tx, rec)
	})
	if err == nil && u.onReset != nil {
		u.onReset(name)
	}
	return err
}

func (u *Users) load(name string) (record, error) {
	return u.getRecord(u.store, name)
}

// dummyHash is compared against when a login names an unknown user, so
// that the answer takes as long as for a wrong password.
func (u *Users) dummyHash() []byte {
	u.dummyOnce.Do(func() {
		u.dummy, _ = bcrypt.GenerateFromPassword([]byte(PasswordDigest("singlecloud")), u.cost)
	})
	return u.dummy
}
