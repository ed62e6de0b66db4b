package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestFrameLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	for _, tc := range []struct {
		f    frame
		want string
	}{
		{frame{Type: "log", Time: at, Step: "etcd", Node: "n1", Message: "member\nadded"}, "03:04:05 INFO [etcd] n1: member added"},
		{frame{Type: "log", Level: "warn", Time: at, Message: "slow"}, "03:04:05 WARN slow"},
		{frame{Type: "progress", Time: at, Step: "images", Index: 2, Total: 9, Percent: 22, Skipped: true}, "03:04:05 PROGRESS [images] step 2/9, 22% (verified, skipped)"},
		{frame{Type: "result", Time: at, Status: "Running", Message: "create succeeded"}, "03:04:05 RESULT cluster is Running: create succeeded"},
		{frame{Type: "stalled", Level: "warn", Time: at, Step: "etcd", Message: "step etcd is past its deadline"}, "03:04:05 STALLED [etcd] step etcd is past its deadline"},
	} {
		if got := frameLine(tc.f); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

func TestResultError(t *testing.T) {
	if err := resultError("lab", frame{Type: "result", Status: "Running", Message: "create succeeded"}); err != nil {
		t.Errorf("a success: %v", err)
	}
	err := resultError("lab", frame{Type: "result", Level: "error", Step: "preflight", Node: "n2", Status: "Unavailable", Message: "node n2: swap is on: turn it off"})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitError || !strings.Contains(ee.msg, "failed at step preflight on node n2: node n2: swap is on: turn it off (cluster is Unavailable)") || !strings.Contains(ee.msg, "hint: ") || !strings.Contains(ee.msg, "cluster retry lab") {
		t.Errorf("a failure: %v", err)
	}
	if err := resultError("lab", frame{Type: "result", Level: "warn", Message: "canceled"}); err == nil || !strings.Contains(err.Error(), "was cancelled") {
		t.Errorf("a cancel: %v", err)
	}
}

func TestProgressBarReaches100(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	eta := 90
	p.update(frame{Type: "progress", Step: "connect", Index: 1, Total: 3, Percent: 10, ETA: &eta})
	p.line("03:04:05 INFO [connect] n1: connected")
	p.update(frame{Type: "progress", Step: "etcd", Node: "n2", Index: 2, Total: 3, Percent: 50})
	p.update(frame{Type: "progress", Step: "kubeconfig", Index: 3, Total: 3, Percent: 100})
	p.line("after")
	p.finish()
	out := b.String()
	for _, want := range []string{" 10%", "step 1/3 connect, ETA 1m30s", "connected\n", " 50%", "step 2/3 etcd on n2", "100%", "step 3/3 kubeconfig", "\nafter\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the bar's output lacks %q:\n%q", want, out)
		}
	}
}

// TestFollowLogResumes: a stream that drops before the result is
// resumed with ?since= the last seq, no frame is printed twice, and a
// failed result ends with an exit error.
func TestFollowLogResumes(t *testing.T) {
	frames := []string{
		`{"seq":1,"type":"log","message":"one","time":"2026-01-01T00:00:00Z"}`,
		`{"seq":2,"type":"progress","step":"connect","index":1,"total":2,"percent":50,"time":"2026-01-01T00:00:00Z"}`,
		`{"seq":3,"type":"log","message":"three","time":"2026-01-01T00:00:00Z"}`,
		`{"seq":4,"type":"result","level":"error","step":"etcd","status":"Unavailable","message":"etcd did not start","time":"2026-01-01T00:00:00Z"}`,
	}
	var (
		mu     sync.Mutex
		sinces []string
	)
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "tok" || r.URL.Path != "/apis/ws.zcloud.cn/v1/clusters/lab/zkelog" {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		since := r.URL.Query().Get("since")
		sinces = append(sinces, since)
		first := len(sinces) == 1
		mu.Unlock()
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		if first { // two frames (plus one seen again), then the connection drops
			for _, f := range frames[:2] {
				_ = conn.WriteMessage(websocket.TextMessage, []byte(f))
			}
			return
		}
		for _, f := range frames[1:] { // the server resends from since; the client skips what it has
			_ = conn.WriteMessage(websocket.TextMessage, []byte(f))
		}
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "operation finished"), time.Now().Add(time.Second))
	}))
	defer srv.Close()
	c, err := newClient(srv.URL, "tok", tlsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a := &app{Streams: Streams{Out: &out, Err: &out}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = a.followLog(ctx, c, "lab", 0, true, false)
	var ee *exitError
	if !errors.As(err, &ee) || !strings.Contains(ee.msg, "etcd did not start") {
		t.Errorf("followLog: %v, want the failure", err)
	}
	if len(sinces) != 2 || sinces[0] != "" || sinces[1] != "2" {
		t.Errorf("connections asked since %q, want none then 2", sinces)
	}
	text := out.String()
	if strings.Count(text, "PROGRESS") != 1 || !strings.Contains(text, "one") || !strings.Contains(text, "three") || !strings.Contains(text, "resuming after frame 2") {
		t.Errorf("output:\n%s", text)
	}
}

func TestResultErrorKeepsLines(t *testing.T) {
	err := resultError("lab", frame{Type: "result", Level: "error", Step: "connect", Message: "node a: refused\nnode b:   refused"})
	if err == nil || !strings.Contains(err.Error(), "step connect: node a: refused\n  node b: refused\nhint: ") {
		t.Errorf("%v", err)
	}
}

// TestFollowLogGivesUp: logs -f gives up after its limit when the stream
// brings no new frame, whether its connections fail or drop at once, with
// backoff; a stream that brings new frames between drops goes on.
func TestFollowLogGivesUp(t *testing.T) {
	frameAt := func(seq int) string {
		return `{"seq":` + strconv.Itoa(seq) + `,"type":"log","message":"m","time":"2026-01-01T00:00:00Z"}`
	}
	for _, tc := range []struct {
		name     string
		serve    func(conn *websocket.Conn, dial int) // one connection
		wantErr  string
		maxDials int
		minDials int
	}{
		{"drops before any frame", func(*websocket.Conn, int) {}, "could not be resumed for 700ms", 4, 2},
		{"drops after a frame seen before", func(conn *websocket.Conn, _ int) {
			_ = conn.WriteMessage(websocket.TextMessage, []byte(frameAt(1)))
		}, "could not be resumed for 700ms", 4, 2},
		{"a new frame before each drop", func(conn *websocket.Conn, dial int) {
			if dial == 6 {
				_ = conn.WriteMessage(websocket.TextMessage, []byte(`{"seq":9,"type":"result","status":"Running","time":"2026-01-01T00:00:00Z"}`))
				return
			}
			_ = conn.WriteMessage(websocket.TextMessage, []byte(frameAt(dial)))
		}, "", 6, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dials atomic.Int32
			up := websocket.Upgrader{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(dials.Add(1))
				conn, err := up.Upgrade(w, r, nil)
				if err != nil {
					return
				}
				tc.serve(conn, n)
				_ = conn.Close() // dropped, without a close frame
			}))
			defer srv.Close()
			c, err := newClient(srv.URL, "tok", tlsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			a := &app{Streams: Streams{Out: &out, Err: &out}, retryLimit: 700 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = a.followLog(ctx, c, "lab", 0, true, false)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("followLog: %v, want %q", err, tc.wantErr)
			}
			if n := int(dials.Load()); n < tc.minDials || n > tc.maxDials {
				t.Errorf("%d connections, want %d to %d\n%s", n, tc.minDials, tc.maxDials, out.String())
			}
		})
	}
}

// TestLogsOfAnOperationWithoutLog: the connection of an imported cluster
// writes no log; logs says it runs, logs -f waits for its end, and either
// exits 1 with the error when it failed or was cancelled.
func TestLogsOfAnOperationWithoutLog(t *testing.T) {
	for _, tc := range []struct {
		name    string
		follow  bool
		states  []string // the operation's state at each read of the cluster
		wantErr string
		wantOut string
	}{
		{"running, without -f", false, []string{"running"}, "", "is running; it writes no log"},
		{"followed to success", true, []string{"running", "running", "succeeded"}, "", "import succeeded"},
		{"followed to a cancel", true, []string{"running", "canceled"}, "was cancelled", "import canceled"},
		{"failed", false, []string{"failed"}, "failed at step connect", "x509: certificate signed by unknown authority"},
		{"a logged operation before its first frame", false, []string{"create running"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads atomic.Int32
			up := websocket.Upgrader{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/zkelog") {
					conn, err := up.Upgrade(w, r, nil)
					if err != nil {
						return
					}
					_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "operation finished"))
					_ = conn.Close()
					return
				}
				n := int(reads.Add(1)) - 1
				state, typ := tc.states[min(n, len(tc.states)-1)], "import"
				if t, s, ok := strings.Cut(state, " "); ok {
					typ, state = t, s
				}
				op := `{"type":"` + typ + `","state":"` + state + `"`
				if state == "failed" {
					op += `,"error":{"step":"connect","message":"x509: certificate signed by unknown authority"}`
				}
				_, _ = io.WriteString(w, `{"name":"alpha","status":"Connecting","lastOperation":`+op+`}}`)
			}))
			defer srv.Close()
			c, err := newClient(srv.URL, "tok", tlsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			a := &app{Streams: Streams{Out: &out, Err: &out}, pollInterval: time.Millisecond}
			err = a.followLog(context.Background(), c, "alpha", 0, tc.follow, false)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("followLog: %v, want %q", err, tc.wantErr)
			}
			if !strings.Contains(out.String(), tc.wantOut) || tc.wantOut == "" && out.Len() > 0 {
				t.Errorf("printed %q, want %q", out.String(), tc.wantOut)
			}
			if got := int(reads.Load()); got != len(tc.states) {
				t.Errorf("read the cluster %d times, want %d", got, len(tc.states))
			}
		})
	}
}
