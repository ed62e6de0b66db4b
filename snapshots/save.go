package snapshots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"time"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// Save streams src, an etcd snapshot as etcd's Maintenance.Snapshot
// returns it, into the store as a new snapshot of in.Cluster. in gives
// Cluster, Trigger, Pinned, Member and TakenBy; the rest of the returned
// record is filled here. The plaintext goes to a 0700 scratch file that is
// always removed; it is checked (etcd's own integrity hash and etcd's
// snapshot status) before anything is stored, so data that is not a whole
// etcd snapshot is refused with an error wrapping ErrBadSnapshot. ctx
// cancels the copy between reads of src.
func (s *Store) Save(ctx context.Context, in Meta, src io.Reader) (Meta, error) {
	if err := validateCluster(in.Cluster); err != nil {
		return Meta{}, err
	}
	if src == nil {
		return Meta{}, fmt.Errorf("save snapshot of %s: no snapshot stream given", in.Cluster)
	}
	now := s.clock().UTC()
	plain, err := s.receive(ctx, src)
	if plain.path != "" {
		defer os.Remove(plain.path)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("save snapshot of %s: %w", in.Cluster, err)
	}
	// etcd's error is left out of the message: it may quote keys and values.
	st, err := snapshotStatus(plain.path)
	if err != nil {
		return Meta{}, fmt.Errorf("save snapshot of %s: etcd's snapshot status cannot read it: take the snapshot again: %w",
			in.Cluster, ErrBadSnapshot)
	}
	m := Meta{
		Cluster:        in.Cluster,
		Trigger:        in.Trigger,
		Pinned:         in.Pinned,
		Member:         in.Member,
		TakenBy:        in.TakenBy,
		CreatedAt:      now,
		Size:           plain.size,
		SHA256:         plain.sha256,
		Revision:       st.Revision,
		KeyCount:       st.TotalKey,
		StorageVersion: st.Version,
		Verification:   Unverified,
	}
	if err := s.store(ctx, &m, plain.path); err != nil {
		return Meta{}, fmt.Errorf("save snapshot of %s: %w", in.Cluster, err)
	}
	return m, nil
}

// received describes the plaintext copied into the scratch directory.
type received struct {
	path   string
	size   int64
	sha256 string
}

// receive copies src into a new scratch file, hashing it and checking the
// sha256 etcd appends to its snapshots. The returned path, when set, must
// be removed by the caller, also on error.
func (s *Store) receive(ctx context.Context, src io.Reader) (received, error) {
	f, err := os.CreateTemp(s.scratch, "save-*.db")
	if errors.Is(err, fs.ErrNotExist) {
		// The scratch directory was removed behind our back: make it again.
		if err = mkdirMarked(s.scratch, s.sealer, roleScratch); err == nil {
			f, err = os.CreateTemp(s.scratch, "save-*.db")
		}
	}
	if err != nil {
		return received{}, fmt.Errorf("create scratch file: %w", err)
	}
	r := received{path: f.Name()}
	sum := sha256.New()
	trailer := &trailerCheck{h: sha256.New()}
	n, err := io.Copy(io.MultiWriter(f, sum, trailer), ctxReader{ctx: ctx, r: src})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, fmt.Errorf("receive snapshot: %w", err)
	}
	r.size = n
	r.sha256 = hex.EncodeToString(sum.Sum(nil))
	if err := trailer.verify(n); err != nil {
		return r, err
	}
	return r, nil
}

// store seals the plaintext at path under a new id and writes its record,
// filling m.ID and m.Name.
func (s *Store) store(ctx context.Context, m *Meta, path string) error {
	id, err := s.reserve(m.Cluster, m.CreatedAt)
	if err != nil {
		return err
	}
	defer s.release(m.Cluster, id)
	m.ID, m.Name = id, m.Cluster+"-"+id
	dir := s.clusterDir(m.Cluster)
	if err := mkdirMarked(dir, s.sealer, roleCluster+m.Cluster); err != nil {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	err = writeAtomic(dir, id+snapExt, func(w io.Writer) error {
		return s.seal(ctx, w, m.Cluster, id, path)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeMetaLocked(*m); err != nil {
		removeIfExists(s.snapPath(m.Cluster, id))
		return err
	}
	return nil
}

// seal writes the sealed form of the plaintext file at path to w.
func (s *Store) seal(ctx context.Context, w io.Writer, cluster, id, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read scratch file: %w", err)
	}
	defer f.Close()
	sw, err := newSealedWriter(w, s.sealer, cluster, id, s.chunkSize)
	if err != nil {
		return err
	}
	if _, err := io.Copy(sw, ctxReader{ctx: ctx, r: f}); err != nil {
		return fmt.Errorf("seal snapshot: %w", err)
	}
	return sw.Close()
}

// reserve picks an unused id for a snapshot of cluster taken at t.
func (s *Store) reserve(cluster string, t time.Time) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 32 {
		id, err := newID(t)
		if err != nil {
			return "", err
		}
		k := key(cluster, id)
		if _, taken := s.reserved[k]; taken {
			continue
		}
		if _, err := os.Lstat(s.metaPath(cluster, id)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, err := os.Lstat(s.snapPath(cluster, id)); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		s.reserved[k] = struct{}{}
		return id, nil
	}
	return "", fmt.Errorf("no free snapshot id for %s at %s: too many snapshots in one second, try again", cluster, t.Format(time.RFC3339))
}

func (s *Store) release(cluster, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, key(cluster, id))
}

// snapshotStatus is etcd's snapshot status of the file at path; a file
// that makes the reader panic is reported as an error.
func snapshotStatus(path string) (st snapshot.Status, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading it failed: %v", r)
		}
	}()
	return snapshot.NewV3(zap.NewNop()).Status(path)
}

// ctxReader stops a copy once ctx is done, checking before every read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// trailerCheck checks the integrity hash etcd appends to a snapshot: the
// sha256 of everything before it. h is fed all but the last sha256.Size
// bytes written, which are kept in tail.
type trailerCheck struct {
	h       hash.Hash
	tail    [sha256.Size]byte
	tailLen int
}

func (t *trailerCheck) Write(p []byte) (int, error) {
	total := t.tailLen + len(p)
	if total <= len(t.tail) {
		copy(t.tail[t.tailLen:], p)
		t.tailLen = total
		return len(p), nil
	}
	emit := total - len(t.tail)
	fromTail := min(emit, t.tailLen)
	t.h.Write(t.tail[:fromTail])
	fromP := emit - fromTail
	t.h.Write(p[:fromP])
	var next [sha256.Size]byte
	k := copy(next[:], t.tail[fromTail:t.tailLen])
	copy(next[k:], p[fromP:])
	t.tail, t.tailLen = next, len(next)
	return len(p), nil
}

// verify checks the trailer of a snapshot of size bytes. etcd's snapshots
// are whole bbolt pages (multiples of 512 bytes) followed by the hash.
func (t *trailerCheck) verify(size int64) error {
	if size%512 != sha256.Size {
		return fmt.Errorf("it is %d bytes, which is not an etcd snapshot with its integrity hash "+
			"(take it with etcd's snapshot API, e.g. etcdctl snapshot save, not by copying the db file): %w", size, ErrBadSnapshot)
	}
	if !bytes.Equal(t.h.Sum(nil), t.tail[:]) {
		return fmt.Errorf("its integrity hash does not match its contents: it was cut short or altered "+
			"on the way; take the snapshot again: %w", ErrBadSnapshot)
	}
	return nil
}
