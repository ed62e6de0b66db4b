package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// record is a user as this package handles it; diskRecord is how it is
// stored.
type record struct {
	Name         string
	PasswordHash []byte
	Projects     []Project
	CreatedAt    time.Time
	TokenStamp   string
}

// diskRecord is the stored form of a user: the token stamp only sealed,
// bound to the user's row, so that a copy of the database file cannot be
// used to make a token that passes the stamp check.
type diskRecord struct {
	Name         string    `json:"name"`
	PasswordHash []byte    `json:"passwordHash"`
	Projects     []Project `json:"projects"`
	CreatedAt    time.Time `json:"createdAt"`
	SealedStamp  []byte    `json:"sealedTokenStamp,omitempty"`
	// PlainStamp is the unsealed stamp of singlecloud before sealing;
	// read only, to be replaced by SealLegacyStamps.
	PlainStamp string `json:"tokenStamp,omitempty"`
}

func (r record) user() User {
	projects := append([]Project{}, r.Projects...)
	return User{Name: r.Name, Projects: projects, CreatedAt: r.CreatedAt, TokenStamp: r.TokenStamp}
}

func (u *Users) getRecord(r storage.Reader, name string) (record, error) {
	b, err := r.Get(storage.BucketUsers, name)
	if errors.Is(err, storage.ErrNotFound) {
		return record{}, fmt.Errorf("user %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return record{}, fmt.Errorf("read user %s: %w", name, err)
	}
	return u.decodeRecord(name, b)
}

// decodeRecord reads the row of user name, opening its token stamp.
func (u *Users) decodeRecord(name string, b []byte) (record, error) {
	var d diskRecord
	if err := json.Unmarshal(b, &d); err != nil {
		return record{}, fmt.Errorf("user %s: stored record is corrupt: %w", name, err)
	}
	rec := record{Name: d.Name, PasswordHash: d.PasswordHash, Projects: d.Projects, CreatedAt: d.CreatedAt, TokenStamp: d.PlainStamp}
	if len(d.SealedStamp) > 0 {
		stamp, err := u.sealer.Open(d.SealedStamp, storage.AAD(storage.BucketUsers, name))
		if err != nil {
			return record{}, fmt.Errorf("user %s: open token stamp: %w", name, err)
		}
		rec.TokenStamp = string(stamp)
	}
	return rec, nil
}

// putRecord saves rec with its token stamp sealed to its row.
func (u *Users) putRecord(tx storage.Tx, rec record) error {
	d := diskRecord{Name: rec.Name, PasswordHash: rec.PasswordHash, Projects: rec.Projects, CreatedAt: rec.CreatedAt}
	if rec.TokenStamp != "" {
		sealed, err := u.sealer.Seal([]byte(rec.TokenStamp), storage.AAD(storage.BucketUsers, rec.Name))
		if err != nil {
			return fmt.Errorf("seal token stamp of user %s: %w", rec.Name, err)
		}
		d.SealedStamp = sealed
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode user %s: %w", rec.Name, err)
	}
	if err := tx.Put(storage.BucketUsers, rec.Name, b); err != nil {
		return fmt.Errorf("save user %s: %w", rec.Name, err)
	}
	return nil
}
