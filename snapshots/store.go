package snapshots

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/storage"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// Store keeps the snapshots of all clusters under one directory:
// dir/<cluster>/<id>.snap (sealed) and dir/<cluster>/<id>.json (record),
// with dir/.scratch for the plaintext of saves and drills in progress.
// One Store per directory; it is safe for concurrent use.
type Store struct {
	dir     string
	scratch string
	sealer  storage.Sealer
	clock   func() time.Time
	// chunkSize is the plaintext size of a sealed chunk; tests make it
	// small to get many chunks out of a small snapshot.
	chunkSize int

	// mu serializes changes of records and files, and guards the maps.
	mu sync.Mutex
	// reserved holds the keys (cluster/id) of snapshots being saved, so two
	// saves in the same second never pick the same id.
	reserved map[string]struct{}
	// verifying holds, for each snapshot being drilled by this process,
	// its record from before the drill. A record saying Verifying that is
	// not here was left by a crashed process and reads as Unverified.
	verifying map[string]Meta
	// held counts, per snapshot (cluster/id), the restores reading it:
	// Delete refuses and Prune passes over a held snapshot.
	held map[string]int
	// kept is what Open left in the store's directories (Kept).
	kept []string
}

// MaxPinned is how many pinned snapshots (those taken before an
// operation) Prune keeps per cluster, the newest; older ones go.
const MaxPinned = 10

// Open opens the store in dir, creating dir (0700) if needed, and removes
// what a crash may have left: plaintext in the scratch directory, files
// half written, and sealed snapshots without a record, each only when the
// store can prove it wrote it (proof.go). A directory another installation
// owns (another key) is refused with ErrForeignDir, one holding other
// files with ErrNotOwned, before anything is written or removed. clock
// gives the time of new snapshots and drills; nil means time.Now.
func Open(dir string, sealer storage.Sealer, clock func() time.Time) (*Store, error) {
	if dir == "" {
		return nil, errors.New("open snapshot store: no directory given: set the snapshot directory option")
	}
	if sealer == nil {
		return nil, errors.New("open snapshot store: no sealer given: snapshots are never stored unencrypted")
	}
	if clock == nil {
		clock = time.Now
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	// Before anything is cleaned: the scratch and the half-written
	// files may be another installation's work in progress.
	if err := claim(dir, sealer); err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	s := &Store{
		dir:       dir,
		scratch:   filepath.Join(dir, scratchName),
		sealer:    sealer,
		clock:     clock,
		chunkSize: chunkSize,
		reserved:  make(map[string]struct{}),
		verifying: make(map[string]Meta),
		held:      make(map[string]int),
	}
	kept, err := resetScratch(s.scratch, sealer)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !clusterRE.MatchString(e.Name()) {
			continue
		}
		if ours, err := isClusterDir(filepath.Join(dir, e.Name())); err != nil {
			return nil, fmt.Errorf("open snapshot store: %w", err)
		} else if !ours {
			continue
		}
		k, err := cleanClusterDir(filepath.Join(dir, e.Name()), e.Name(), sealer)
		if err != nil {
			return nil, fmt.Errorf("open snapshot store: %w", err)
		}
		kept = append(kept, k...)
	}
	s.kept = kept
	return s, nil
}

// Kept lists the files, relative to the store's directory, that Open found
// among the store's own and left because the store did not write them.
func (s *Store) Kept() []string { return s.kept }

func (s *Store) clusterDir(cluster string) string { return filepath.Join(s.dir, cluster) }

func (s *Store) snapPath(cluster, id string) string {
	return filepath.Join(s.dir, cluster, id+snapExt)
}

func (s *Store) metaPath(cluster, id string) string {
	return filepath.Join(s.dir, cluster, id+metaExt)
}

func key(cluster, id string) string { return cluster + "/" + id }

// List returns the records of cluster's snapshots, newest first. A cluster
// without snapshots has an empty list.
func (s *Store) List(cluster string) ([]Meta, error) {
	if err := validateCluster(cluster); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked(cluster)
}

func (s *Store) listLocked(cluster string) ([]Meta, error) {
	entries, err := os.ReadDir(s.clusterDir(cluster))
	if errors.Is(err, fs.ErrNotExist) {
		return []Meta{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots of %s: %w", cluster, err)
	}
	metas := make([]Meta, 0, len(entries)/2)
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), metaExt)
		if !ok || !idRE.MatchString(id) {
			continue
		}
		m, err := s.getLocked(cluster, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list snapshots of %s: %w", cluster, err)
		}
		metas = append(metas, m)
	}
	sortNewestFirst(metas)
	return metas, nil
}

// Get returns the record of snapshot id of cluster.
func (s *Store) Get(cluster, id string) (Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getLocked(cluster, id)
}

// getLocked reads a record and checks it belongs where it is stored.
func (s *Store) getLocked(cluster, id string) (Meta, error) {
	m, err := readMetaFile(s.metaPath(cluster, id))
	if err != nil {
		return Meta{}, fmt.Errorf("snapshot %s/%s: %w", cluster, id, err)
	}
	if m.Cluster != cluster || m.ID != id {
		return Meta{}, fmt.Errorf("snapshot record %s/%s is the record of %s/%s, copied or renamed: delete it: %w",
			cluster, id, m.Cluster, m.ID, ErrCorrupt)
	}
	if _, ok := s.verifying[key(cluster, id)]; m.Verification == Verifying && !ok {
		m.Verification = Unverified
	}
	return m, nil
}

// writeMetaLocked replaces m's record.
func (s *Store) writeMetaLocked(m Meta) error {
	data, err := encodeMeta(m)
	if err != nil {
		return err
	}
	return writeAtomic(s.clusterDir(m.Cluster), m.ID+metaExt, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Open returns the decrypted plaintext of snapshot id of cluster as a
// stream, and its record. Every chunk is authenticated before it is
// returned, and at the end the size and sha256 are checked against the
// record: a file that fails either returns an error wrapping ErrCorrupt.
// The caller must close the reader; the plaintext it returns holds all the
// cluster's secrets.
func (s *Store) Open(cluster, id string) (io.ReadCloser, Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return nil, Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.getLocked(cluster, id)
	if err != nil {
		return nil, Meta{}, err
	}
	f, err := os.Open(s.snapPath(cluster, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Meta{}, fmt.Errorf("snapshot %s/%s has a record but no sealed file: delete it: %w", cluster, id, ErrNotFound)
	}
	if err != nil {
		return nil, Meta{}, fmt.Errorf("open snapshot %s/%s: %w", cluster, id, err)
	}
	return &plainReader{f: f, r: newSealedReader(f, s.sealer, cluster, id), meta: m, sum: sha256.New()}, m, nil
}

// plainReader is the stream Store.Open returns: the sealed reader, with
// the plaintext checked against the record at its end.
type plainReader struct {
	f    *os.File
	r    *sealedReader
	meta Meta
	sum  hash.Hash
	n    int64
	err  error
}

func (p *plainReader) Read(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.r.Read(b)
	p.sum.Write(b[:n])
	p.n += int64(n)
	if p.n > p.meta.Size {
		p.err = p.mismatch("it holds more than the %d bytes its record says", p.meta.Size)
		return 0, p.err
	}
	if errors.Is(err, io.EOF) {
		if p.n != p.meta.Size {
			p.err = p.mismatch("it holds %d bytes, its record says %d", p.n, p.meta.Size)
		} else if got := hex.EncodeToString(p.sum.Sum(nil)); got != p.meta.SHA256 {
			p.err = p.mismatch("its sha256 is %s, its record says %s", got, p.meta.SHA256)
		}
		if p.err != nil {
			return n, p.err
		}
	}
	if err != nil {
		p.err = err
	}
	return n, err
}

func (p *plainReader) mismatch(format string, args ...any) error {
	return fmt.Errorf("snapshot %s/%s decrypts but does not match its record: %s; delete it and take a new snapshot: %w",
		p.meta.Cluster, p.meta.ID, fmt.Sprintf(format, args...), ErrCorrupt)
}

func (p *plainReader) Close() error { return p.f.Close() }

// Delete removes snapshot id of cluster: its record first, so it is never
// listed without its sealed file.
func (s *Store) Delete(cluster, id string) error {
	if err := validateRef(cluster, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.metaPath(cluster, id)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete snapshot %s/%s: %w", cluster, id, ErrNotFound)
	}
	if s.held[key(cluster, id)] > 0 {
		return fmt.Errorf("delete snapshot %s/%s: %w; delete it once the restore has finished", cluster, id, ErrHeld)
	}
	if err := s.removeLocked(cluster, id); err != nil {
		return err
	}
	return durable.SyncDir(s.clusterDir(cluster))
}

// Hold keeps snapshot id of cluster from Delete and Prune until Release:
// a restore is reading it. It fails with ErrNotFound for a snapshot that
// does not exist.
func (s *Store) Hold(cluster, id string) error {
	if err := validateRef(cluster, id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.metaPath(cluster, id)); err != nil {
		return fmt.Errorf("hold snapshot %s/%s: %w", cluster, id, ErrNotFound)
	}
	s.held[key(cluster, id)]++
	return nil
}

// Release ends one Hold of snapshot id of cluster.
func (s *Store) Release(cluster, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(cluster, id)
	if s.held[k]--; s.held[k] <= 0 {
		delete(s.held, k)
	}
}

// Clusters lists the clusters the store holds snapshots of, sorted: the
// directories named like a cluster that hold a record, a sealed snapshot
// or the mark of a directory the store made. Other directories, whatever
// their name, are not the store's.
func (s *Store) Clusters() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshot directories: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() || validateCluster(e.Name()) != nil {
			continue
		}
		ours, err := isClusterDir(s.clusterDir(e.Name()))
		if err != nil {
			return nil, fmt.Errorf("list snapshot directories: %w", err)
		}
		if ours {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// removeLocked removes a snapshot's files; the caller syncs the directory.
func (s *Store) removeLocked(cluster, id string) error {
	if err := removeIfExists(s.metaPath(cluster, id)); err != nil {
		return fmt.Errorf("delete snapshot %s/%s: %w", cluster, id, err)
	}
	if err := removeIfExists(s.snapPath(cluster, id)); err != nil {
		return fmt.Errorf("delete snapshot %s/%s: %w", cluster, id, err)
	}
	delete(s.verifying, key(cluster, id))
	return nil
}

// DeleteCluster removes every snapshot of cluster, for a cluster that is
// deleted, and the cluster's directory if nothing else is in it. A cluster
// without snapshots is not an error. Only what the store can prove it
// wrote is removed (proof.go); other files are kept with their directory,
// and reported by an error wrapping ErrKept (a *KeptError) once the
// snapshots are gone. A Save for the cluster that is still running adds
// its snapshot afterwards: stop the cluster's saves first.
func (s *Store) DeleteCluster(cluster string) error {
	if err := validateCluster(cluster); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.verifying {
		if strings.HasPrefix(k, cluster+"/") {
			delete(s.verifying, k)
		}
	}
	dir := s.clusterDir(cluster)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
	}
	if !holdsStoreFiles(entries) {
		// Not the store's directory, whatever its name.
		return nil
	}
	kept, proven, err := s.removeProvenLocked(dir, cluster, entries)
	if err != nil {
		return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
	}
	if len(kept) > 0 {
		if err := durable.SyncDir(dir); err != nil {
			return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
		}
		return fmt.Errorf("delete the snapshots of %s: %w", cluster, &KeptError{Dir: dir, Files: kept})
	}
	if mark, err := readMark(dir, s.sealer, roleCluster+cluster); err != nil {
		return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
	} else if mark == markOurs || proven {
		if err := removeIfExists(filepath.Join(dir, markFile)); err != nil {
			return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
		}
		// os.Remove: only an empty directory goes.
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("delete the snapshots of %s: %w", cluster, err)
		}
	}
	return durable.SyncDir(s.dir)
}

// removeProvenLocked removes the records, sealed snapshots and files being
// written in dir that the store can prove it wrote for cluster, and
// returns the names it kept (everything else but the mark) and whether a
// sealed snapshot or a record proved the directory the store's.
func (s *Store) removeProvenLocked(dir, cluster string, entries []fs.DirEntry) (kept []string, proven bool, err error) {
	for _, e := range entries {
		kind, id := classify(e)
		switch kind {
		case entryMark:
			continue
		case entryOther:
			kept = append(kept, e.Name())
			continue
		case entrySnap:
			state, err := provenSnapshot(filepath.Join(dir, e.Name()), s.sealer, cluster, id)
			if err != nil {
				return nil, false, err
			}
			if state != sealedOurs {
				kept = append(kept, e.Name())
				continue
			}
			proven = true
		case entryRecord:
			if m, err := readMetaFile(filepath.Join(dir, e.Name())); err != nil || m.Cluster != cluster || m.ID != id {
				kept = append(kept, e.Name())
				continue
			}
			proven = true
		}
		if err := removeIfExists(filepath.Join(dir, e.Name())); err != nil {
			return nil, false, err
		}
	}
	return kept, proven, nil
}

// Prune removes cluster's oldest unpinned snapshots beyond the newest keep
// unpinned ones, and its oldest pinned ones beyond the newest MaxPinned,
// and returns the records of those removed. Pinned snapshots do not count
// towards keep; a snapshot being drilled or held by a restore is left for
// the next prune.
func (s *Store) Prune(cluster string, keep int) ([]Meta, error) {
	if err := validateCluster(cluster); err != nil {
		return nil, err
	}
	if keep < 0 {
		return nil, fmt.Errorf("prune snapshots of %s: keep is %d, it must be 0 or more", cluster, keep)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	metas, err := s.listLocked(cluster)
	if err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	removed := []Meta{}
	kept, pinned := 0, 0
	for _, m := range metas {
		if m.Pinned {
			if pinned++; pinned <= MaxPinned {
				continue
			}
		} else if kept < keep {
			kept++
			continue
		}
		if _, busy := s.verifying[key(cluster, m.ID)]; busy || s.held[key(cluster, m.ID)] > 0 {
			continue
		}
		if err := s.removeLocked(cluster, m.ID); err != nil {
			return removed, fmt.Errorf("prune: %w", err)
		}
		removed = append(removed, m)
	}
	if len(removed) > 0 {
		if err := durable.SyncDir(s.clusterDir(cluster)); err != nil {
			return removed, fmt.Errorf("prune: %w", err)
		}
	}
	return removed, nil
}
