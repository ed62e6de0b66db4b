package server

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"sync"
	"testing"
)

// TestGzipper: what the cache's gzipper compresses reads back as it was,
// whether its compressor is new or reused, concurrently too.
func TestGzipper(t *testing.T) {
	g := newClusterCache().gzip
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"small", `{"type":"collection","data":[]}`},
		{"large", strings.Repeat(`{"name":"c","status":"Running"},`, 5000)},
		{"large again (a reused compressor)", strings.Repeat(`{"name":"d","status":"Creating"},`, 5000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, gz := range map[string]func([]byte) []byte{"gzipper": g.bytes} {
				zr, err := gzip.NewReader(bytes.NewReader(gz([]byte(tc.in))))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out, err := io.ReadAll(zr)
				if err != nil || string(out) != tc.in {
					t.Errorf("%s: read back %d bytes (%v), want %d", name, len(out), err, len(tc.in))
				}
			}
		})
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := []byte(strings.Repeat(string(rune('a'+i)), 4096))
			zr, err := gzip.NewReader(bytes.NewReader(g.bytes(in)))
			if err != nil {
				t.Error(err)
				return
			}
			if out, _ := io.ReadAll(zr); !bytes.Equal(out, in) {
				t.Errorf("goroutine %d: read back something else", i)
			}
		}()
	}
	wg.Wait()
}

func TestListSorts(t *testing.T) {
	for _, tc := range []struct {
		sort string
		want bool
	}{
		{"name", true}, {"-name", true}, {"status", true}, {"-status", true},
		{"createdAt", true}, {"-createdAt", true},
		{"", false}, {"Name", false}, {"--name", false}, {"created", false},
	} {
		if got := isListSort(tc.sort); got != tc.want {
			t.Errorf("isListSort(%q) = %v, want %v", tc.sort, got, tc.want)
		}
	}
	all := listSorts()
	for _, s := range all {
		if !isListSort(s) {
			t.Errorf("listSorts has %q, which isListSort refuses", s)
		}
	}
	all[0] = "changed"
	if listSorts()[0] != "name" {
		t.Error("listSorts shares its slice")
	}
}
