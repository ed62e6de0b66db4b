package snapshots

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/durable"
	"github.com/zdnscloud/singlecloud/storage"
)

// The store deletes only what it can prove it wrote, never a file or a
// directory because of its name or where it is: a snapshot directory may
// be shared with other files of its owner (a backup volume, a home
// directory), and a user may put anything beside the store's files.
//
// The proofs:
//   - a sealed snapshot proves itself: its first chunk opens with this
//     installation's key under its own cluster and id (AEAD with that AAD);
//   - a directory the store made holds a mark, a constant sealed with the
//     key and bound to the directory's role and name (the store's own
//     directory, a cluster's, the scratch directory, a drill's);
//   - a record, or a file being written, is a file of the store's exact
//     name pattern inside a directory that holds its mark or a proven
//     snapshot.
//
// A directory is removed only with os.Remove, so only when it is empty:
// whatever the store did not write keeps the directory too.

// markFile is the name of a directory's mark.
const markFile = ".owner"

// markPlaintext is what every mark seals; its AAD says whose it is.
const markPlaintext = "singlecloud snapshot directory"

// Roles of marked directories, bound into each mark's AAD.
const (
	roleStore   = "store"
	roleCluster = "cluster/"
	roleScratch = "scratch"
	roleDrill   = "drill"
)

// markAAD binds a mark to its role. The store's own mark keeps the AAD of
// the owner file of earlier releases, so their directories stay theirs.
func markAAD(role string) []byte {
	if role == roleStore {
		return storage.AAD("snapshots", ownerFile)
	}
	return storage.AAD("snapshots", markFile+"\x00"+role)
}

// Names the store gives the files it writes.
var (
	// tempRE is a file being written by writeAtomic or createMark:
	// ".<name>.tmp-<digits>".
	tempRE = regexp.MustCompile(`^\.([0-9]{8}-[0-9]{6}-[0-9a-f]{4}\.(snap|json)|owner)\.tmp-[0-9]+$`)
	// saveRE is a save's plaintext in the scratch directory.
	saveRE = regexp.MustCompile(`^save-[0-9]+\.db$`)
	// drillRE is a drill's directory in the scratch directory.
	drillRE = regexp.MustCompile(`^drill-[0-9]+$`)
)

// createMark writes dir's mark for role, failing with fs.ErrExist if dir
// has one (durable.CreateFile: exclusive, whole or absent after a crash).
func createMark(dir string, sealer storage.Sealer, role string) error {
	sealed, err := sealer.Seal([]byte(markPlaintext), markAAD(role))
	if err != nil {
		return err
	}
	return durable.CreateFile(dir, markFile, sealed, fileMode)
}

// markState is what a directory's mark says.
type markState int

const (
	markMissing markState = iota // no mark
	markOurs                     // a mark that opens with this key, for this role
	markForeign                  // a mark that does not
)

// readMark checks dir's mark for role.
func readMark(dir string, sealer storage.Sealer, role string) (markState, error) {
	data, err := os.ReadFile(filepath.Join(dir, markFile))
	if errors.Is(err, fs.ErrNotExist) {
		return markMissing, nil
	}
	if err != nil {
		return markMissing, fmt.Errorf("read %s: %w", filepath.Join(dir, markFile), err)
	}
	if plain, err := sealer.Open(data, markAAD(role)); err != nil || string(plain) != markPlaintext {
		return markForeign, nil
	}
	return markOurs, nil
}

// mkdirMarked creates dir (0700) with its mark for role; a directory that
// exists already is left as it is (it may not be the store's).
func mkdirMarked(dir string, sealer storage.Sealer, role string) error {
	if err := os.Mkdir(dir, dirMode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	if err := createMark(dir, sealer, role); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mark %s: %w", dir, err)
	}
	return nil
}

// snapshotState is what a sealed file proves.
type snapshotState int

const (
	sealedOurs    snapshotState = iota // its first chunk opens with this key as cluster/id
	sealedForeign                      // it does not: another key, or not a snapshot at all
)

// provenSnapshot reads the first chunk of the sealed file at path as
// snapshot cluster/id. Errors other than corruption (the file cannot be
// read) are returned.
func provenSnapshot(path string, sealer storage.Sealer, cluster, id string) (snapshotState, error) {
	f, err := os.Open(path)
	if err != nil {
		return sealedForeign, fmt.Errorf("check %s: %w", path, err)
	}
	defer f.Close()
	_, err = io.ReadFull(newSealedReader(f, sealer, cluster, id), make([]byte, 1))
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// Authenticated: data, or an empty final chunk.
		return sealedOurs, nil
	case errors.Is(err, ErrCorrupt):
		return sealedForeign, nil
	default:
		return sealedForeign, fmt.Errorf("check %s: %w", path, err)
	}
}

// entryKind is what a name in a cluster's directory is to the store.
type entryKind int

const (
	entryOther  entryKind = iota // not a name the store writes
	entrySnap                    // <id>.snap
	entryRecord                  // <id>.json
	entryTemp                    // a file being written
	entryMark                    // the directory's mark
)

// classify tells what name, in a cluster's directory, is to the store, and
// its snapshot id for entrySnap and entryRecord.
func classify(e fs.DirEntry) (entryKind, string) {
	name := e.Name()
	if !e.Type().IsRegular() {
		return entryOther, ""
	}
	if id, ok := strings.CutSuffix(name, snapExt); ok && idRE.MatchString(id) {
		return entrySnap, id
	}
	if id, ok := strings.CutSuffix(name, metaExt); ok && idRE.MatchString(id) {
		return entryRecord, id
	}
	if tempRE.MatchString(name) {
		return entryTemp, ""
	}
	if name == markFile {
		return entryMark, ""
	}
	return entryOther, ""
}

// isClusterDir tells whether dir is one of the store's cluster
// directories: it holds a record, a sealed snapshot or a mark. A user's
// directory named like a cluster holds none of them and is never touched.
func isClusterDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	return holdsStoreFiles(entries), nil
}

// holdsStoreFiles tells whether entries hold a record, a sealed snapshot
// or a mark.
func holdsStoreFiles(entries []fs.DirEntry) bool {
	for _, e := range entries {
		if kind, _ := classify(e); kind == entrySnap || kind == entryRecord || kind == entryMark {
			return true
		}
	}
	return false
}

// KeptError reports files that the store left because it cannot prove it
// wrote them: a directory it would have removed holds them.
type KeptError struct {
	Dir   string
	Files []string
}

func (e *KeptError) Error() string {
	const show = 5
	names := e.Files
	more := ""
	if len(names) > show {
		names, more = names[:show], fmt.Sprintf(" and %d more", len(e.Files)-show)
	}
	return fmt.Sprintf("kept %s: it holds %d file(s) singlecloud did not write (%s%s); remove them by hand if they "+
		"are yours to delete", e.Dir, len(e.Files), strings.Join(names, ", "), more)
}

// Is makes a KeptError match ErrKept.
func (e *KeptError) Is(target error) bool { return target == ErrKept }
