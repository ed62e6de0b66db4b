package storage

import "errors"

var (
	// ErrNotFound reports a missing key.
	ErrNotFound = errors.New("not found")
	// ErrClosed reports use of a closed Store.
	ErrClosed = errors.New("store closed")
	// ErrSchemaVersion reports a database written by an incompatible
	// version of singlecloud.
	ErrSchemaVersion = errors.New("unsupported schema version")
	// ErrNoInstallation reports an etcd prefix that holds no singlecloud
	// installation, opened by one that must not create it (a backup, a
	// migration's source).
	ErrNoInstallation = errors.New("no singlecloud installation")
	// ErrDecrypt reports a sealed value that the key file cannot open: the
	// key file is not the one the database was written with, or the value
	// is corrupt.
	ErrDecrypt = errors.New("cannot decrypt secret")
	// ErrFileMode reports a database file that users other than its owner
	// may access.
	ErrFileMode = errors.New("database file is not private")
	// ErrUnknownBucket reports a bucket that is not part of the schema: a
	// programming error, since buckets are the constants of schema.go.
	ErrUnknownBucket = errors.New("unknown bucket")
)
