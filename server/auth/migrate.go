package auth

import (
	"encoding/json"
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// SealLegacyStamps gives every user whose token stamp an older singlecloud
// stored unsealed a new, sealed stamp, all in one transaction, and returns
// how many users it changed. The old stamps were readable in the database
// file, so they are replaced rather than sealed: tokens carrying them stop
// working (NewTokens replaces the unsealed signing secret too, so they
// would not verify anyway). Run it once at start-up, before serving; on a
// database without such users it changes nothing.
func (u *Users) SealLegacyStamps() (int, error) {
	n := 0
	err := u.store.Update(func(tx storage.Tx) error {
		kvs, err := tx.List(storage.BucketUsers)
		if err != nil {
			return fmt.Errorf("list users: %w", err)
		}
		for _, kv := range kvs {
			var d diskRecord
			if err := json.Unmarshal(kv.Value, &d); err != nil {
				return fmt.Errorf("user %s: stored record is corrupt: %w", kv.Key, err)
			}
			if d.PlainStamp == "" {
				continue
			}
			rec, err := u.decodeRecord(kv.Key, kv.Value)
			if err != nil {
				return err
			}
			if rec.TokenStamp, err = newTokenStamp(); err != nil {
				return err
			}
			if err := u.putRecord(tx, rec); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("seal token stamps: %w", err)
	}
	return n, nil
}
