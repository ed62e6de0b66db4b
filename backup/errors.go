package backup

import "errors"

var (
	// ErrCorrupt reports a backup that is truncated, altered or not a
	// backup at all (its checksum, its count or its layout is wrong).
	ErrCorrupt = errors.New("backup is corrupt")
	// ErrUnsupported reports a backup of another format or schema
	// version.
	ErrUnsupported = errors.New("backup version not supported")
	// ErrWrongKey reports a key file that is not the one the backup's
	// secrets are sealed with.
	ErrWrongKey = errors.New("wrong key file for the backup")
	// ErrNotEmpty reports a restore target that already holds an
	// installation.
	ErrNotEmpty = errors.New("restore target is not empty")
	// ErrMismatch reports a target that does not hold what was restored
	// into it.
	ErrMismatch = errors.New("target differs from the backup")
)
