package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"lab-1":                  "lab-1",
		"日本語 ünïcode ✓":          "日本語 ünïcode ✓",
		"red\x1b[31mtext":        `red\x1b[31mtext`,
		"ok\rEVIL":               `ok\rEVIL`,
		"csi\u009b2J":            `csi\u009b2J`,
		"del\x7f":                `del\x7f`,
		"bidi\u202egnp.exe":      `bidi\u202egnp.exe`,
		"bad\xffutf8":            `bad\xffutf8`,
		"lines\nand\ttabs":       "lines\nand\ttabs",
		"bell\a back\b null\x00": `bell\a back\b null\x00`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// hostile is text a hostile server (or a node's OS image string) sends
// to drive the terminal: a colour, a line overwrite, a clear screen.
const hostile = "evil\x1b[31m\rroot\u009b2J"

// TestServerTextIsEscaped: every way the CLI prints what a server sent —
// tables (-o wide too), -o name, an error envelope, log and event lines —
// shows control characters escaped, never raw.
func TestServerTextIsEscaped(t *testing.T) {
	js := `"evil\u001b[31m\rroot\u009b2J"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/clusters/broken"):
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"code":"InvalidState","status":409,"type":"error","message":` + js + `}`))
		case strings.HasSuffix(r.URL.Path, "/hosts"):
			_, _ = w.Write([]byte(`{"type":"collection","data":[{"name":"h1","status":"Reachable","system":{"os":` + js + `,"kernel":` + js + `},"reason":` + js + `}]}`))
		default:
			_, _ = w.Write([]byte(`{"type":"collection","data":[{"name":` + js + `,"status":` + js + `,"reason":` + js + `}]}`))
		}
	}))
	defer srv.Close()
	dir := loggedIn(t, srv.URL)
	for _, args := range [][]string{
		{"cluster", "list"},
		{"cluster", "list", "-o", "wide"},
		{"cluster", "list", "-o", "name"},
		{"host", "list", "-o", "wide"},
		{"cluster", "get", "broken"},
	} {
		code, out, stderr := runCLI(t, dir, args...)
		all := out + stderr
		if strings.ContainsAny(all, "\x1b\r\u009b") {
			t.Errorf("%v printed a control character raw: %q", args, all)
		}
		if !strings.Contains(all, `evil\x1b[31m\rroot\u009b2J`) {
			t.Errorf("%v (exit %d) does not show the text escaped: %q", args, code, all)
		}
	}

	f := frame{Type: "log", Level: "info", Step: "step\x1b[2K", Node: "n\r1", Message: hostile, Time: time.Now()}
	ev := event{Type: "ClusterUpdated", Cluster: "c\x1b]0;title\a", Status: "Running", Reason: hostile, Time: time.Now()}
	for _, line := range []string{frameLine(f), eventLine(ev)} {
		if strings.ContainsAny(line, "\x1b\r\u009b\a") {
			t.Errorf("a stream line holds a control character raw: %q", line)
		}
	}
}

// TestDroppedStreamReasonIsEscaped: the reason a server gives when it
// closes a log stream is its text too; logs -f prints it in its
// reconnecting note, escaped like every other line.
func TestDroppedStreamReasonIsEscaped(t *testing.T) {
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseTryAgainLater, hostile))
		_ = conn.Close()
	}))
	defer srv.Close()
	c, err := newClient(srv.URL, "tok", tlsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a := &app{Streams: Streams{Out: &out, Err: &out}, retryLimit: 300 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = a.followLog(ctx, c, "lab", 0, true, false)
	if got := out.String(); strings.ContainsAny(got, "\x1b\r\u009b") || !strings.Contains(got, `evil\x1b[31m\rroot\u009b2J`) {
		t.Errorf("logs -f printed the close reason raw or not at all: %q", got)
	}
}
