// Package backup owns singlecloud's manager backups: one portable format
// that a bbolt or an etcd Store is dumped to (Write) and restored from (a
// BoltTarget or an EtcdTarget), and Migrate, which moves an installation
// from one Store to the other through it.
//
// A backup is consistent: it is read in one transaction of the Store's View
// (one bbolt read transaction, one etcd revision). It holds every key and
// value of the schema's buckets exactly as stored, so the secrets in it are
// sealed as they are at rest; the key file that seals them is not in it and
// must be backed up separately. It ends with a SHA-256 of everything before
// it, which a restore checks before it writes anything.
package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// Kind names the kind of Store a backup was taken from.
type Kind string

// The kinds of Store.
const (
	KindBolt Kind = "bolt"
	KindEtcd Kind = "etcd"
)

// FormatVersion is the version of the backup format this package writes
// and reads.
const FormatVersion = 1

// Header describes a backup. It never holds a secret: KeyCheck is sealed.
type Header struct {
	Format int `json:"format"`
	// Source is the kind of Store the backup was taken from, Origin which
	// one (the bbolt file, or etcd's endpoints and prefix), Host the
	// machine that took it.
	Source  Kind      `json:"source"`
	Origin  string    `json:"origin"`
	Host    string    `json:"host,omitempty"`
	Created time.Time `json:"created"`
	// SchemaVersion is the storage.SchemaVersion of the data.
	SchemaVersion string `json:"schemaVersion"`
	// KeyFile is the path of the key file the source's secrets are sealed
	// with, on Host: where to find the key a restore needs.
	KeyFile string `json:"keyFile,omitempty"`
	// KeyCheck is keyCheckPlaintext sealed with that key, so that a
	// restore can tell the right key file before it writes anything.
	KeyCheck []byte `json:"keyCheck"`
}

// The layout of a backup:
//
//	magic
//	uvarint length, header (JSON)
//	per record: tagRecord, uvarint length + bucket, uvarint length + key, uvarint length + value
//	tagEnd, uvarint number of records, SHA-256 of every byte before it
//
// Records come bucket by bucket in the order of storage.Buckets(), keys in
// ascending order within a bucket.
const (
	magic     = "singlecloud-backup\n"
	tagRecord = 'r'
	tagEnd    = 'e'
)

// Bounds on the lengths a reader accepts, so that a corrupt length fails
// fast instead of reading or allocating without limit.
const (
	maxHeaderLen = 64 << 10
	maxKeyLen    = 64 << 10
	// maxValueLen is far above anything singlecloud stores (etcd refuses
	// requests over 1.5 MiB by default) yet bounds a corrupt length.
	maxValueLen = 256 << 20
)

// keyCheckPlaintext is sealed into every Header.KeyCheck.
const keyCheckPlaintext = "singlecloud backup key check"

// keyCheckAAD binds the key check to its purpose (no row of the schema has
// this bucket).
func keyCheckAAD() []byte { return storage.AAD(".backup", "keycheck") }

// Record is one key of a bucket, as stored (sealed secrets stay sealed).
type Record struct {
	Bucket storage.Bucket
	Key    string
	Value  []byte
}

// encoder writes the format, hashing every byte it writes.
type encoder struct {
	w     *bufio.Writer
	h     hash.Hash
	n     int // records written
	bytes int64
	err   error
	last  struct {
		bucket int
		key    string
	}
}

func newEncoder(w io.Writer, hdr Header) (*encoder, error) {
	e := &encoder{w: bufio.NewWriterSize(w, 64<<10), h: sha256.New()}
	e.last.bucket = -1
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("encode the backup header: %w", err)
	}
	e.write([]byte(magic))
	e.writeBytes(js)
	return e, e.err
}

// record writes one record; records must come in the format's order.
func (e *encoder) record(r Record) error {
	idx := bucketIndex(r.Bucket)
	if idx < 0 {
		return fmt.Errorf("write backup: bucket %q is not part of schema version %s", r.Bucket, storage.SchemaVersion)
	}
	if idx < e.last.bucket || (idx == e.last.bucket && r.Key <= e.last.key) {
		return fmt.Errorf("write backup: key %q of bucket %s is out of order", r.Key, r.Bucket)
	}
	e.last.bucket, e.last.key = idx, r.Key
	e.write([]byte{tagRecord})
	e.writeBytes([]byte(r.Bucket))
	e.writeBytes([]byte(r.Key))
	e.writeBytes(r.Value)
	e.n++
	return e.err
}

// close writes the trailer and flushes.
func (e *encoder) close() error {
	e.write([]byte{tagEnd})
	e.write(binary.AppendUvarint(nil, uint64(e.n)))
	if e.err == nil {
		sum := e.h.Sum(nil)
		_, e.err = e.w.Write(sum)
		e.bytes += int64(len(sum))
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	return e.err
}

func (e *encoder) writeBytes(b []byte) {
	e.write(binary.AppendUvarint(nil, uint64(len(b))))
	e.write(b)
}

func (e *encoder) write(b []byte) {
	if e.err != nil {
		return
	}
	e.h.Write(b)
	_, e.err = e.w.Write(b)
	e.bytes += int64(len(b))
}

// decoder reads the format, hashing every byte it reads, and checks the
// order of the records and the trailer.
type decoder struct {
	r      *bufio.Reader
	h      hash.Hash
	n      int
	offset int64
	last   struct {
		bucket int
		key    string
	}
}

func newDecoder(r io.Reader) (*decoder, Header, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10), h: sha256.New()}
	d.last.bucket = -1
	var hdr Header
	m := make([]byte, len(magic))
	if err := d.read(m); err != nil || string(m) != magic {
		return nil, hdr, fmt.Errorf("it does not start like a singlecloud backup (made by singlecloud backup): %w", ErrCorrupt)
	}
	js, err := d.readBytes(maxHeaderLen, "header")
	if err != nil {
		return nil, hdr, err
	}
	if err := json.Unmarshal(js, &hdr); err != nil {
		return nil, hdr, fmt.Errorf("decode the header: %v: %w", err, ErrCorrupt)
	}
	if hdr.Format != FormatVersion {
		return nil, hdr, fmt.Errorf("the backup has format version %d, this singlecloud reads version %d: restore it with the release that made it: %w",
			hdr.Format, FormatVersion, ErrUnsupported)
	}
	if hdr.SchemaVersion != storage.SchemaVersion {
		return nil, hdr, fmt.Errorf("the backup holds schema version %q, this singlecloud writes version %q: restore it with the release that made it: %w",
			hdr.SchemaVersion, storage.SchemaVersion, ErrUnsupported)
	}
	return d, hdr, nil
}

// next returns the next record, or done at the trailer once its count and
// checksum are verified.
func (d *decoder) next() (rec Record, done bool, err error) {
	tag, err := d.readByte()
	if err != nil {
		return rec, false, err
	}
	switch tag {
	case tagEnd:
		return rec, true, d.trailer()
	case tagRecord:
	default:
		return rec, false, fmt.Errorf("unexpected byte %#x at offset %d: %w", tag, d.offset-1, ErrCorrupt)
	}
	bucket, err := d.readBytes(maxKeyLen, "bucket name")
	if err != nil {
		return rec, false, err
	}
	key, err := d.readBytes(maxKeyLen, "key")
	if err != nil {
		return rec, false, err
	}
	value, err := d.readBytes(maxValueLen, "value")
	if err != nil {
		return rec, false, err
	}
	rec = Record{Bucket: storage.Bucket(bucket), Key: string(key), Value: value}
	idx := bucketIndex(rec.Bucket)
	if idx < 0 {
		return rec, false, fmt.Errorf("record %d names bucket %q, which schema version %s does not have: %w", d.n+1, bucket, storage.SchemaVersion, ErrCorrupt)
	}
	if idx < d.last.bucket || (idx == d.last.bucket && rec.Key <= d.last.key) {
		return rec, false, fmt.Errorf("record %d (key %q of bucket %s) is out of order: %w", d.n+1, rec.Key, rec.Bucket, ErrCorrupt)
	}
	d.last.bucket, d.last.key = idx, rec.Key
	d.n++
	return rec, false, nil
}

func (d *decoder) trailer() error {
	count, err := binary.ReadUvarint(byteReader{d})
	if err != nil {
		return d.eofError(err, "record count")
	}
	if count != uint64(d.n) {
		return fmt.Errorf("the trailer counts %d records but the backup holds %d: %w", count, d.n, ErrCorrupt)
	}
	want := d.h.Sum(nil)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(d.r, got); err != nil {
		return d.eofError(err, "checksum")
	}
	d.offset += int64(len(got))
	if !bytes.Equal(got, want) {
		return fmt.Errorf("its SHA-256 checksum does not match its content: the file is damaged or was altered: %w", ErrCorrupt)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("there are bytes after the checksum: %w", ErrCorrupt)
	}
	return nil
}

func (d *decoder) readBytes(limit uint64, what string) ([]byte, error) {
	n, err := binary.ReadUvarint(byteReader{d})
	if err != nil {
		return nil, d.eofError(err, what)
	}
	if n > limit {
		return nil, fmt.Errorf("a %s of %d bytes at offset %d, more than the %d a backup may hold: %w", what, n, d.offset, limit, ErrCorrupt)
	}
	// Grown as the bytes arrive: a corrupt length allocates no more
	// than the file holds.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, d.r, int64(n)); err != nil {
		return nil, d.eofError(err, what)
	}
	b := buf.Bytes()
	d.h.Write(b)
	d.offset += int64(n)
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func (d *decoder) read(p []byte) error {
	if _, err := io.ReadFull(d.r, p); err != nil {
		return d.eofError(err, "magic")
	}
	d.h.Write(p)
	d.offset += int64(len(p))
	return nil
}

func (d *decoder) readByte() (byte, error) {
	b, err := d.r.ReadByte()
	if err != nil {
		return 0, d.eofError(err, "record")
	}
	d.h.Write([]byte{b})
	d.offset++
	return b, nil
}

func (d *decoder) eofError(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("it ends at offset %d inside a %s (truncated: the copy is incomplete): %w", d.offset, what, ErrCorrupt)
	}
	return fmt.Errorf("read the backup at offset %d: %w", d.offset, err)
}

// byteReader feeds binary.ReadUvarint through the decoder's hash.
type byteReader struct{ d *decoder }

func (b byteReader) ReadByte() (byte, error) {
	c, err := b.d.r.ReadByte()
	if err == nil {
		b.d.h.Write([]byte{c})
		b.d.offset++
	}
	return c, err
}

// bucketIndex is b's position in storage.Buckets(), or -1.
func bucketIndex(b storage.Bucket) int {
	for i, known := range storage.Buckets() {
		if b == known {
			return i
		}
	}
	return -1
}
