package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// leftovers lists the upload temporaries in dir on the host.
func leftovers(t *testing.T, h *testbed.Host, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(h.Path(dir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), uploadTempPrefix) {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestUploadAndReadFile(t *testing.T) {
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	ctx := testContext(t)

	tests := []struct {
		name string
		path string
		data []byte
		mode os.FileMode
	}{
		{name: "secret in new directories", path: "/etc/kubernetes/ssl/zke-test/kube-ca-key.pem", data: []byte("-----BEGIN RSA PRIVATE KEY-----\nx\n"), mode: 0o600},
		{name: "replace with other mode", path: "/etc/kubernetes/ssl/zke-test/kube-ca-key.pem", data: []byte("second"), mode: 0o644},
		{name: "empty file", path: "/tmp/zke-test/empty", data: []byte{}, mode: 0o640},
		{name: "large file", path: "/tmp/zke-test/large", data: bytes.Repeat([]byte("0123456789abcdef"), 1<<16), mode: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.Upload(ctx, tt.path, tt.data, tt.mode); err != nil {
				t.Fatalf("Upload: %v", err)
			}
			st, err := os.Stat(h.Path(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != tt.mode || !st.Mode().IsRegular() {
				t.Errorf("mode %v, want %v", st.Mode(), tt.mode)
			}
			onHost, err := h.ReadFile(tt.path)
			if err != nil || !bytes.Equal(onHost, tt.data) {
				t.Errorf("file on the host: %d bytes, %v; want %d bytes", len(onHost), err, len(tt.data))
			}
			read, err := c.ReadFile(ctx, tt.path)
			if err != nil || !bytes.Equal(read, tt.data) {
				t.Errorf("ReadFile: %d bytes, %v; want %d bytes", len(read), err, len(tt.data))
			}
			if l := leftovers(t, h, path.Dir(tt.path)); len(l) > 0 {
				t.Errorf("temporaries left: %v", l)
			}
		})
	}

	t.Run("missing file", func(t *testing.T) {
		_, err := c.ReadFile(ctx, "/etc/kubernetes/nothing-here")
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), h.Name) {
			t.Fatalf("ReadFile(missing) = %v, want fs.ErrNotExist naming the node", err)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, p := range []string{"relative/path", "/a/../b", "/"} {
			if err := c.Upload(ctx, p, nil, 0o600); err == nil {
				t.Errorf("Upload(%q) accepted", p)
			}
		}
		if err := c.Upload(ctx, "/tmp/x", nil, 0); err == nil {
			t.Error("Upload with mode 0 accepted")
		}
		if err := c.Upload(ctx, "/tmp/x", nil, os.ModeDir|0o755); err == nil {
			t.Error("Upload with a type bit accepted")
		}
	})
}

// A reader on the node sees the old content or the new, never a mix, and
// the file is replaced by rename (a new inode), not rewritten in place.
func TestUploadIsAtomic(t *testing.T) {
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	ctx := testContext(t)
	const p = "/etc/kubernetes/atomic.bin"
	a := bytes.Repeat([]byte("a"), 1<<20)
	b := bytes.Repeat([]byte("b"), 1<<20)
	if err := c.Upload(ctx, p, a, 0o600); err != nil {
		t.Fatal(err)
	}
	// A file opened before the uploads keeps its content if they rename a
	// new file over the path, and would change if they rewrote it.
	old, err := os.Open(h.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads int
	var bad error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			data, err := os.ReadFile(h.Path(p))
			if err != nil {
				bad = err
				return
			}
			reads++
			if !bytes.Equal(data, a) && !bytes.Equal(data, b) {
				bad = errors.New("read a partial or mixed file")
				return
			}
		}
	}()
	for i := range 10 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := c.Upload(ctx, p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if bad != nil {
		t.Fatalf("after %d reads: %v", reads, bad)
	}
	if reads < 2 {
		t.Errorf("only %d reads during the uploads", reads)
	}
	if data, err := io.ReadAll(old); err != nil || !bytes.Equal(data, a) {
		t.Errorf("the file was rewritten in place, not renamed over (%d bytes, %v)", len(data), err)
	}
}

// A cancelled upload returns promptly, leaves the target untouched and
// removes its temporaries.
func TestUploadCancel(t *testing.T) {
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	const p = "/tmp/zke-cancel/big.bin"
	// Made before the clock starts: under -race, filling 256 MiB alone
	// takes seconds.
	data := bytes.Repeat([]byte("z"), 256<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Upload(ctx, p, data, 0o600)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Upload = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Upload returned %s after its deadline", elapsed)
	}
	waitFor(t, 10*time.Second, "upload temporaries were not removed", func() bool { return len(leftovers(t, h, path.Dir(p))) == 0 })
	if _, err := os.Stat(h.Path(p)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target exists after a cancelled upload: %v", err)
	}
	// The connection is still usable.
	if err := c.Upload(testContext(t), p, []byte("ok"), 0o600); err != nil {
		t.Fatalf("Upload after a cancel: %v", err)
	}
}
