package runtime

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxLogBytes caps the logs kept of a job or returned by ContainerLogs:
// the last 1 MiB holds any component's startup failure while a runaway
// container cannot exhaust singlecloud's memory.
const maxLogBytes = 1 << 20

// errBadFrame reports a log stream that is not in Docker's multiplexed
// format.
var errBadFrame = errors.New("malformed docker log stream")

// demux splits Docker's multiplexed stream (non-TTY attach and logs): each
// frame is an 8-byte header — stream (0 stdin, 1 stdout, 2 stderr), three
// zero bytes, big-endian payload size — and the payload. It reads r to EOF.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			if err == io.ErrUnexpectedEOF {
				return fmt.Errorf("%w: truncated frame header", errBadFrame)
			}
			return err
		}
		var w io.Writer
		switch hdr[0] {
		case 0, 1:
			w = stdout
		case 2:
			w = stderr
		default:
			return fmt.Errorf("%w: unknown stream %d (is the container's TTY on?)", errBadFrame, hdr[0])
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		n, err := io.CopyN(w, r, size)
		if err != nil {
			if err == io.EOF {
				return fmt.Errorf("%w: frame cut after %d of %d bytes", errBadFrame, n, size)
			}
			return err
		}
	}
}

// copyBody copies a raw (TTY) stream.
func copyBody(w io.Writer, r io.Reader) (int64, error) { return io.Copy(w, r) }

// tailBuffer is an io.Writer that keeps the last max bytes written.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write never fails. The buffer grows to at most twice max between two
// compactions, so that keeping the tail costs O(1) per byte.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		n := copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:n]
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// Bytes returns the last max bytes written.
func (t *tailBuffer) Bytes() []byte {
	if len(t.buf) > t.max {
		return t.buf[len(t.buf)-t.max:]
	}
	return t.buf
}

// Truncated reports whether more than max bytes were written.
func (t *tailBuffer) Truncated() bool { return t.total > int64(t.max) }

// jsonMessage is one line of a streamed image pull or load.
type jsonMessage struct {
	Status   string `json:"status"`
	ID       string `json:"id"`
	Progress string `json:"progress"`
	Stream   string `json:"stream"`
	Error    string `json:"error"`
	Detail   *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readMessages decodes the JSON messages of r until EOF, calling fn for
// each, and returns a *StreamError for the first message reporting an
// error. Other failures are the reader's (or a malformed message's).
func readMessages(r io.Reader, op string, fn func(jsonMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonMessage
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if m.Detail != nil && m.Detail.Message != "" {
			return &StreamError{Op: op, Message: m.Detail.Message}
		}
		if m.Error != "" {
			return &StreamError{Op: op, Message: m.Error}
		}
		fn(m)
	}
}
