package runtime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// frame builds one frame of Docker's multiplexed stream.
func frame(stream byte, payload string) []byte {
	hdr := make([]byte, 8, 8+len(payload))
	hdr[0] = stream
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	return append(hdr, payload...)
}

func TestDemux(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name           string
		in             []byte
		stdout, stderr string
		combined       string
		bad            bool
	}{
		{name: "empty"},
		{name: "stdout and stderr interleaved", in: cat(frame(1, "hi\n"), frame(2, "oops\n"), frame(1, "bye\n")),
			stdout: "hi\nbye\n", stderr: "oops\n", combined: "hi\noops\nbye\n"},
		{name: "empty frame", in: cat(frame(1, ""), frame(1, "x")), stdout: "x", combined: "x"},
		{name: "stdin counts as stdout", in: frame(0, "in"), stdout: "in", combined: "in"},
		{name: "truncated header", in: frame(1, "abc")[:5], bad: true},
		{name: "truncated payload", in: frame(1, "abcdef")[:10], bad: true},
		{name: "tty stream", in: []byte("plain text output\n"), bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := demux(bytes.NewReader(tt.in), &stdout, &stderr)
			if tt.bad {
				if !errors.Is(err, errBadFrame) {
					t.Fatalf("demux = %v, want errBadFrame", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tt.stdout || stderr.String() != tt.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", stdout.String(), stderr.String(), tt.stdout, tt.stderr)
			}
			var both bytes.Buffer
			if err := demux(bytes.NewReader(tt.in), &both, &both); err != nil || both.String() != tt.combined {
				t.Errorf("combined %q, %v; want %q", both.String(), err, tt.combined)
			}
		})
	}
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "under the cap", max: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly the cap", max: 6, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "many small writes", max: 4, writes: strings.Split("abcdefghijklmnop", ""), want: "mnop", truncated: true},
		{name: "one big write", max: 4, writes: []string{"ab", "0123456789"}, want: "6789", truncated: true},
		{name: "compaction keeps order", max: 5, writes: []string{"abcd", "efgh", "ij", "k"}, want: "ghijk", truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newTailBuffer(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
				if len(b.buf) > 2*tt.max {
					t.Fatalf("buffer grew to %d bytes, cap %d", len(b.buf), 2*tt.max)
				}
			}
			if got := string(b.Bytes()); got != tt.want {
				t.Errorf("Bytes = %q, want %q", got, tt.want)
			}
			if b.Truncated() != tt.truncated {
				t.Errorf("Truncated = %v, want %v", b.Truncated(), tt.truncated)
			}
		})
	}
}

func TestReadMessages(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		n       int
		wantErr string
	}{
		{name: "progress", in: `{"status":"Pulling fs layer","id":"a"}{"status":"Downloading","progress":"[=>  ]","id":"a"}` + "\n" + `{"status":"Status: Downloaded newer image for x:1"}`, n: 3},
		{name: "error detail", in: `{"status":"Pulling"}` + "\n" + `{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown (short)"}` + "\n", n: 1, wantErr: "manifest unknown"},
		{name: "error only", in: `{"error":"open /var/lib/docker/tmp: no space left on device"}`, wantErr: "open /var/lib/docker/tmp: no space left on device"},
		{name: "load", in: `{"stream":"Loaded image: singlecloud.test/busybox:1\n"}`, n: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			err := readMessages(strings.NewReader(tt.in), "pull x:1", func(jsonMessage) { n++ })
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var se *StreamError
				if !errors.As(err, &se) || se.Message != tt.wantErr || se.Op != "pull x:1" {
					t.Fatalf("readMessages = %v, want a StreamError %q", err, tt.wantErr)
				}
			}
			if n != tt.n {
				t.Errorf("%d messages before the end, want %d", n, tt.n)
			}
		})
	}
	if err := readMessages(strings.NewReader(`{"status":`), "load", func(jsonMessage) {}); err == nil {
		t.Error("a cut message is not an error")
	}
}
