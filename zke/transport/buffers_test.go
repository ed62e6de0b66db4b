package transport

import (
	"bytes"
	"strings"
	"testing"
)

func TestHeadBuffer(t *testing.T) {
	tests := []struct {
		name          string
		max           int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "fits", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly full", max: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "cut in a write", max: 4, writes: []string{"abc", "def"}, want: "abcd", wantTruncated: true},
		{name: "writes after full", max: 3, writes: []string{"abc", "def", "g"}, want: "abc", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &headBuffer{max: tt.max}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if string(b.bytes()) != tt.want || b.truncated() != tt.wantTruncated {
				t.Fatalf("got %q truncated %v, want %q %v", b.bytes(), b.truncated(), tt.want, tt.wantTruncated)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name          string
		max           int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "fits", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "keeps the end", max: 4, writes: []string{"abc", "def"}, want: "cdef", wantTruncated: true},
		{name: "one big write", max: 3, writes: []string{"abcdefgh"}, want: "fgh", wantTruncated: true},
		{name: "many small writes compact", max: 3, writes: strings.Split("abcdefghijklmnop", ""), want: "nop", wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &tailBuffer{max: tt.max}
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				if len(b.buf) > 2*tt.max {
					t.Fatalf("buffer grew to %d bytes, cap %d", len(b.buf), tt.max)
				}
			}
			if string(b.bytes()) != tt.want || b.truncated() != tt.wantTruncated {
				t.Fatalf("got %q truncated %v, want %q %v", b.bytes(), b.truncated(), tt.want, tt.wantTruncated)
			}
		})
	}
	// A chatty stream stays within 2×max however much is written.
	b := &tailBuffer{max: 1 << 10}
	chunk := bytes.Repeat([]byte("x"), 100)
	for range 100000 {
		b.Write(chunk)
	}
	if cap(b.buf) > 4<<10 || len(b.bytes()) != 1<<10 {
		t.Fatalf("after 10 MB: cap %d len %d", cap(b.buf), len(b.bytes()))
	}
}
