package snapshots

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zdnscloud/singlecloud/storage"
)

// The sealed file format. A file starts with magic, then holds frames: a
// 4-byte big-endian length and sealer.Seal(chunk, chunkAAD(...)) of up to
// chunkSize bytes of plaintext. The AAD binds each chunk to its snapshot
// (cluster and id), its position, and whether it is the last one; the last
// chunk (possibly empty) is always written. So a file that is truncated,
// extended, reordered, or made of chunks of another snapshot fails to
// open, and it cannot be read under another cluster's or snapshot's name.
const (
	magic = "singlecloud-snapshot/1\n"
	// chunkSize is the plaintext size of every chunk but the last.
	chunkSize = 1 << 20
	// maxFrame bounds a frame's length, so a corrupt length never makes the
	// reader allocate more than one chunk and the sealer's overhead.
	maxFrame = chunkSize + 1024
	// aadPrefix keeps snapshot AADs apart from every other use of the key.
	aadPrefix = "singlecloud/snapshot\x00"
)

// chunkAAD is the additional authenticated data of chunk index of the
// snapshot cluster/id. Cluster names and ids never contain '/' or NUL.
func chunkAAD(cluster, id string, index uint64, final bool) []byte {
	aad := make([]byte, 0, len(aadPrefix)+len(cluster)+1+len(id)+1+8+1)
	aad = append(aad, aadPrefix...)
	aad = append(aad, cluster...)
	aad = append(aad, '/')
	aad = append(aad, id...)
	aad = append(aad, 0)
	aad = binary.BigEndian.AppendUint64(aad, index)
	if final {
		return append(aad, 1)
	}
	return append(aad, 0)
}

// sealedWriter encrypts a stream into the sealed file format. Close writes
// the final chunk; it does not close the underlying writer.
type sealedWriter struct {
	w         io.Writer
	sealer    storage.Sealer
	cluster   string
	id        string
	chunkSize int
	index     uint64
	buf       []byte
	closed    bool
}

// newSealedWriter writes the magic line to w and returns a writer that seals
// everything written to it in chunks of size bytes (chunkSize when 0).
func newSealedWriter(w io.Writer, sealer storage.Sealer, cluster, id string, size int) (*sealedWriter, error) {
	if size <= 0 || size > chunkSize {
		size = chunkSize
	}
	if _, err := io.WriteString(w, magic); err != nil {
		return nil, fmt.Errorf("write sealed snapshot header: %w", err)
	}
	return &sealedWriter{w: w, sealer: sealer, cluster: cluster, id: id, chunkSize: size,
		buf: make([]byte, 0, size+1)}, nil
}

// Write buffers p and seals every full chunk that is known not to be the
// last: a full chunk is held back until more data follows it.
func (s *sealedWriter) Write(p []byte) (int, error) {
	if s.closed {
		return 0, errors.New("write to a closed sealed snapshot")
	}
	n := len(p)
	for len(p) > 0 {
		room := s.chunkSize + 1 - len(s.buf)
		take := min(room, len(p))
		s.buf = append(s.buf, p[:take]...)
		p = p[take:]
		if len(s.buf) > s.chunkSize {
			if err := s.emit(s.buf[:s.chunkSize], false); err != nil {
				return 0, err
			}
			s.buf = append(s.buf[:0], s.buf[s.chunkSize:]...)
		}
	}
	return n, nil
}

// Close seals what is buffered as the final chunk.
func (s *sealedWriter) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.emit(s.buf, true)
}

func (s *sealedWriter) emit(chunk []byte, final bool) error {
	sealed, err := s.sealer.Seal(chunk, chunkAAD(s.cluster, s.id, s.index, final))
	if err != nil {
		return fmt.Errorf("seal snapshot chunk %d: %w", s.index, err)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(sealed)))
	if _, err := s.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("write snapshot chunk %d: %w", s.index, err)
	}
	if _, err := s.w.Write(sealed); err != nil {
		return fmt.Errorf("write snapshot chunk %d: %w", s.index, err)
	}
	s.index++
	return nil
}

// sealedReader decrypts the sealed file format as a stream, one chunk in
// memory at a time. Every chunk is authenticated before any of its bytes
// is returned; a file that ends anywhere but after its final chunk fails.
type sealedReader struct {
	r       *bufio.Reader
	sealer  storage.Sealer
	cluster string
	id      string
	index   uint64
	plain   []byte
	done    bool
	err     error
	started bool
}

// newSealedReader returns a reader of the plaintext of the sealed
// snapshot cluster/id read from r.
func newSealedReader(r io.Reader, sealer storage.Sealer, cluster, id string) *sealedReader {
	return &sealedReader{r: bufio.NewReaderSize(r, 64<<10), sealer: sealer, cluster: cluster, id: id}
}

// corrupt wraps ErrCorrupt with what was wrong and what to do.
func (s *sealedReader) corrupt(format string, args ...any) error {
	return fmt.Errorf("snapshot %s/%s: %s; it cannot be used: delete it and take a new snapshot: %w",
		s.cluster, s.id, fmt.Sprintf(format, args...), ErrCorrupt)
}

func (s *sealedReader) Read(p []byte) (int, error) {
	for len(s.plain) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.done {
			return 0, io.EOF
		}
		s.err = s.next()
	}
	n := copy(p, s.plain)
	s.plain = s.plain[n:]
	return n, nil
}

// next reads, authenticates and decrypts the next chunk into s.plain.
func (s *sealedReader) next() error {
	if !s.started {
		s.started = true
		head := make([]byte, len(magic))
		if _, err := io.ReadFull(s.r, head); err != nil {
			return s.readErr(err, "it is too short to hold the header")
		}
		if string(head) != magic {
			return s.corrupt("it does not start with the header %q", magic[:len(magic)-1])
		}
	}
	var hdr [4]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return s.readErr(err, "it ends before its last chunk (truncated)")
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxFrame {
		return s.corrupt("chunk %d claims %d bytes, more than the %d a chunk can have", s.index, n, maxFrame)
	}
	sealed := make([]byte, n)
	if _, err := io.ReadFull(s.r, sealed); err != nil {
		return s.readErr(err, fmt.Sprintf("chunk %d is cut short (truncated)", s.index))
	}
	// Only the chunk at the end of the file may be the final one; a final
	// chunk followed by more data, or a file cut after a middle chunk, fails
	// authentication below.
	_, perr := s.r.Peek(1)
	final := errors.Is(perr, io.EOF)
	if perr != nil && !final {
		return fmt.Errorf("read snapshot %s/%s: %w", s.cluster, s.id, perr)
	}
	plain, err := s.sealer.Open(sealed, chunkAAD(s.cluster, s.id, s.index, final))
	if err != nil {
		return fmt.Errorf("snapshot %s/%s: chunk %d does not authenticate: the file was truncated, altered, "+
			"assembled from other snapshots or stored under another name, or the key file is not the one it was "+
			"sealed with; it cannot be used: delete it and take a new snapshot: %w: %w", s.cluster, s.id, s.index, ErrCorrupt, err)
	}
	s.index++
	s.plain = plain
	s.done = final
	return nil
}

// readErr classifies an error reading the file: running out of data is
// corruption, anything else is reported as it is.
func (s *sealedReader) readErr(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.corrupt("%s", what)
	}
	return fmt.Errorf("read snapshot %s/%s: %w", s.cluster, s.id, err)
}
