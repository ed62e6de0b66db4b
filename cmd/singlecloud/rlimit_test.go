package main

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// At start the soft open files limit is raised to the hard one, and the
// stream bounds derived from it are logged once.
func TestRaiseLimitsRaisesAndLogs(t *testing.T) {
	var out bytes.Buffer
	raiseLimits(slog.New(slog.NewTextHandler(&out, nil)))
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	if l.Cur != l.Max {
		t.Errorf("open files limit: soft %d, hard %d; want them equal", l.Cur, l.Max)
	}
	want := "open files limit " + strconv.FormatUint(uint64(l.Cur), 10)
	if s := out.String(); !strings.Contains(s, "streams: at most 64 per user, 128 per address, ") || !strings.Contains(s, want) {
		t.Errorf("log = %q, want the stream bounds and %q", s, want)
	}
}
