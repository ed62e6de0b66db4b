package clustermanager

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// lockedBuffer is a bytes.Buffer safe for the manager's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes the JSON log lines written so far.
func (b *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// The server log tells an operator what every operation did: its start,
// every state change, and its outcome with duration, step and node.
func TestOperationsAreLogged(t *testing.T) {
	var logs lockedBuffer
	inst := &stepInstaller{failStep: "etcd"}
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) {
		o.Installer = inst
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	if _, err := h.m.Create(context.Background(), createConfig(t, "c")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("c", fsm.StateUnavailable, 10*time.Second)

	find := func(msg string) map[string]any {
		t.Helper()
		for _, l := range logs.lines(t) {
			if l["msg"] == msg && l["cluster"] == "c" {
				return l
			}
		}
		t.Fatalf("no %q line for cluster c in the log:\n%v", msg, logs.lines(t))
		return nil
	}
	tests := []struct {
		msg   string
		level string
		want  map[string]any
	}{
		{"operation started", "INFO", map[string]any{"operation": "create"}},
		{"cluster state changed", "INFO", map[string]any{"from": "", "to": "Creating", "event": "create"}},
		{"operation step started", "INFO", map[string]any{"operation": "create", "step": "connect", "index": 1.0, "total": 4.0}},
		{"operation step finished", "INFO", map[string]any{"operation": "create", "step": "connect"}},
		{"operation failed", "WARN", map[string]any{"operation": "create", "outcome": "failed", "step": "etcd", "node": "n2"}},
	}
	for _, tt := range tests {
		l := find(tt.msg)
		if l["level"] != tt.level {
			t.Errorf("%q logged at %v, want %s", tt.msg, l["level"], tt.level)
		}
		for k, v := range tt.want {
			if l[k] != v {
				t.Errorf("%q: %s = %v, want %v (line %v)", tt.msg, k, l[k], v, l)
			}
		}
	}
	if d, _ := find("operation failed")["duration"].(string); d == "" {
		t.Error("the failed operation's line has no duration")
	} else if _, err := time.ParseDuration(d); err != nil {
		t.Errorf("duration %q: %v", d, err)
	}
	for _, l := range logs.lines(t) {
		if strings.Contains(l["msg"].(string), "PRIVATE KEY") || strings.Contains(toJSON(t, l), "PRIVATE KEY") {
			t.Fatalf("a log line carries the SSH key: %v", l)
		}
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
