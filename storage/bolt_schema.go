package storage

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// initSchema creates the missing buckets of Buckets() and writes
// SchemaVersion into a new database, or checks the version of an existing
// one. It runs in the transaction that opens the file, so a database is
// never left half-initialised.
func initSchema(tx *bolt.Tx) error {
	for _, b := range Buckets() {
		if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	for _, b := range obsoleteBuckets() {
		if tx.Bucket([]byte(b)) == nil {
			continue
		}
		if err := tx.DeleteBucket([]byte(b)); err != nil {
			return fmt.Errorf("drop obsolete bucket %s: %w", b, err)
		}
	}
	settings := tx.Bucket([]byte(BucketSettings))
	found := settings.Get([]byte(SettingSchemaVersion))
	if found == nil {
		if err := settings.Put([]byte(SettingSchemaVersion), []byte(SchemaVersion)); err != nil {
			return fmt.Errorf("write schema version: %w", err)
		}
		return nil
	}
	if string(found) != SchemaVersion {
		return fmt.Errorf("the file has schema version %q but this singlecloud reads version %q: "+
			"run the singlecloud release that wrote it, or restore a backup made by this release: %w",
			found, SchemaVersion, ErrSchemaVersion)
	}
	return nil
}
