// Package snapshots keeps etcd snapshots of managed Kubernetes clusters on
// the singlecloud server, encrypted at rest, and runs restore drills that
// prove each snapshot can be restored into a working etcd.
//
// A snapshot holds every secret of its cluster, so its plaintext exists on
// disk only inside the store's 0700 scratch directory, and only while it is
// being checked, sealed or drilled.
package snapshots

import "errors"

var (
	// ErrNotFound reports a snapshot (or its record) that does not exist.
	ErrNotFound = errors.New("snapshot not found")
	// ErrForeignDir reports a snapshot directory that another
	// installation (another key file) owns.
	ErrForeignDir = errors.New("snapshot directory of another installation")
	// ErrNotOwned reports a snapshot directory that holds files
	// singlecloud did not write: the store refuses to adopt it.
	ErrNotOwned = errors.New("snapshot directory holds files singlecloud did not write")
	// ErrKept reports files left in place because the store cannot prove
	// it wrote them (KeptError says which).
	ErrKept = errors.New("files singlecloud did not write were kept")
	// ErrCorrupt reports a stored snapshot that cannot be read back as it
	// was saved: truncated, altered, reordered, copied from another
	// snapshot or cluster, or sealed with another key file.
	ErrCorrupt = errors.New("stored snapshot is corrupt")
	// ErrInvalidID reports a cluster name or snapshot id that is not of the
	// allowed form, so it never becomes part of a path.
	ErrInvalidID = errors.New("invalid name")
	// ErrBadSnapshot reports data given to Save that is not a complete etcd
	// snapshot; nothing is stored.
	ErrBadSnapshot = errors.New("not a valid etcd snapshot")
	// ErrBusy reports a snapshot that is already being drilled.
	ErrBusy = errors.New("snapshot is being drilled")
	// ErrMismatch reports a drill whose restored etcd does not hold what the
	// snapshot's record says it should.
	ErrMismatch = errors.New("restored etcd does not match the snapshot's record")
	// ErrDrillTimeout reports a drill that did not finish in time: it
	// proves nothing about the snapshot, which stays unverified.
	ErrDrillTimeout = errors.New("restore drill timed out")
	// ErrHeld reports a delete of a snapshot that a restore is reading.
	ErrHeld = errors.New("snapshot is held by a restore")
)
