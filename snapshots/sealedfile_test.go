package snapshots

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
)

const testChunk = 1024

func testSealer(t *testing.T) storage.Sealer {
	t.Helper()
	s, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sealBytes seals plain as snapshot cluster/id with testChunk chunks,
// writing it in pieces of step bytes.
func sealBytes(t *testing.T, sealer storage.Sealer, cluster, id string, plain []byte, step int) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := newSealedWriter(&out, sealer, cluster, id, testChunk)
	if err != nil {
		t.Fatal(err)
	}
	for p := plain; len(p) > 0; {
		n := min(step, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// splitFrames splits a sealed file into its header and its frames (each
// with its length prefix).
func splitFrames(t *testing.T, data []byte) (header []byte, frames [][]byte) {
	t.Helper()
	header, rest := data[:len(magic)], data[len(magic):]
	for len(rest) > 0 {
		n := 4 + int(binary.BigEndian.Uint32(rest))
		if n > len(rest) {
			t.Fatalf("frame of %d bytes in %d left", n, len(rest))
		}
		frames = append(frames, rest[:n])
		rest = rest[n:]
	}
	return header, frames
}

func join(header []byte, frames ...[]byte) []byte {
	return bytes.Join(append([][]byte{header}, frames...), nil)
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealedRoundTrip(t *testing.T) {
	sealer := testSealer(t)
	tests := []struct {
		name   string
		size   int
		step   int
		frames int
	}{
		{"empty", 0, 1, 1},
		{"one byte", 1, 1, 1},
		{"under a chunk", testChunk - 1, 100, 1},
		{"exactly a chunk", testChunk, testChunk, 1},
		{"a chunk and a byte", testChunk + 1, 7, 2},
		{"exactly three chunks", 3 * testChunk, 5000, 3},
		{"many chunks, one write", 10*testChunk + 5, 1 << 20, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := random(t, tt.size)
			sealed := sealBytes(t, sealer, "c1", "20261125-140102-3f9a", plain, tt.step)
			if _, frames := splitFrames(t, sealed); len(frames) != tt.frames {
				t.Errorf("%d frames, want %d", len(frames), tt.frames)
			}
			got, err := io.ReadAll(newSealedReader(bytes.NewReader(sealed), sealer, "c1", "20261125-140102-3f9a"))
			if err != nil {
				t.Fatalf("read back: %v", err)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("read back %d bytes differing from the %d written", len(got), len(plain))
			}
		})
	}
}

func TestSealedTamper(t *testing.T) {
	sealer := testSealer(t)
	const cluster, id, otherID = "c1", "20261125-140102-3f9a", "20261125-140102-0000"
	plain := random(t, 4*testChunk+10)
	sealed := sealBytes(t, sealer, cluster, id, plain, 4096)
	header, frames := splitFrames(t, sealed)
	other := sealBytes(t, sealer, cluster, otherID, random(t, 4*testChunk+10), 4096)
	_, otherFrames := splitFrames(t, other)
	otherKey := testSealer(t)

	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 0x01
		return c
	}
	hugeLen := binary.BigEndian.AppendUint32(nil, maxFrame+1)
	tests := []struct {
		name    string
		data    []byte
		cluster string
		id      string
		sealer  storage.Sealer
	}{
		{"flipped ciphertext byte", flip(sealed, len(sealed)/2), cluster, id, sealer},
		{"flipped header byte", flip(sealed, 3), cluster, id, sealer},
		{"flipped length byte", flip(sealed, len(magic)+3), cluster, id, sealer},
		{"last frame dropped", join(header, frames[:len(frames)-1]...), cluster, id, sealer},
		{"cut inside the last frame", sealed[:len(sealed)-10], cluster, id, sealer},
		{"only the header", header, cluster, id, sealer},
		{"empty file", nil, cluster, id, sealer},
		{"frames reordered", join(header, frames[1], frames[0], frames[2], frames[3], frames[4]), cluster, id, sealer},
		{"frame from another snapshot", join(header, frames[0], otherFrames[1], frames[2], frames[3], frames[4]), cluster, id, sealer},
		{"final frame repeated", join(header, append(frames, frames[len(frames)-1])...), cluster, id, sealer},
		{"garbage appended", append(bytes.Clone(sealed), 0, 0, 0, 1, 9), cluster, id, sealer},
		{"frame length over the limit", join(header, hugeLen), cluster, id, sealer},
		{"read as another cluster", sealed, "c2", id, sealer},
		{"read as another snapshot", sealed, cluster, otherID, sealer},
		{"another key", sealed, cluster, id, otherKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := io.ReadAll(newSealedReader(bytes.NewReader(tt.data), tt.sealer, tt.cluster, tt.id))
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read = %d bytes, %v; want an error wrapping ErrCorrupt", len(got), err)
			}
		})
	}
}
