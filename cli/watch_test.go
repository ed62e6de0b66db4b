package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// fakeCluster serves GET /clusters/lab with the status set by set, and
// the events websocket, which sends an event whenever set is called.
type fakeCluster struct {
	mu     sync.Mutex
	body   string
	status int
	events chan string
}

func (f *fakeCluster) set(status int, body string) {
	f.mu.Lock()
	f.status, f.body = status, body
	f.mu.Unlock()
	f.events <- `{"type":"ClusterStatusChanged","cluster":"lab","status":"x","time":"2026-01-01T00:00:00Z"}`
}

func newFakeCluster(t *testing.T, eventsForbidden bool) (*fakeCluster, *client) {
	f := &fakeCluster{status: 200, body: `{"name":"lab","status":"Creating"}`, events: make(chan string, 10)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/ws.zcloud.cn/v1/events":
			if eventsForbidden {
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"code":"PermissionDenied","status":403,"type":"error","message":"only admin can watch events"}`))
				return
			}
			serveEvents(w, r, f.events)
		case "/apis/zcloud.cn/v1/clusters/lab":
			f.mu.Lock()
			status, body := f.status, f.body
			f.mu.Unlock()
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := newClient(srv.URL, "tok", tlsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func TestWaitCluster(t *testing.T) {
	for _, tc := range []struct {
		name      string
		forbidden bool
		want      string
		deleted   bool
		then      func(f *fakeCluster)
		wantErr   string
		wantOut   string
	}{
		{"running after an event", false, "Running", false, func(f *fakeCluster) { f.set(200, `{"name":"lab","status":"Running"}`) }, "", "cluster/lab Running\n"},
		{"deleted after an event", false, "", true, func(f *fakeCluster) {
			f.set(404, `{"code":"NotFound","status":404,"type":"error","message":"not found"}`)
		}, "", "cluster/lab deleted\n"},
		{"a failed operation ends the wait", false, "Running", false, func(f *fakeCluster) {
			f.set(200, `{"name":"lab","status":"Unavailable","lastOperation":{"type":"create","state":"failed","error":{"message":"swap is on"}}}`)
		}, "its create operation failed: swap is on", ""},
		{"not the admin: polling", true, "Running", false, func(f *fakeCluster) { f.set(200, `{"name":"lab","status":"Running"}`) }, "", "cluster/lab Running\n"},
		{"timeout", false, "Running", false, func(*fakeCluster) {}, "timed out after 1.5s waiting for cluster lab (last seen Creating)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFakeCluster(t, tc.forbidden)
			var out bytes.Buffer
			a := &app{Streams: Streams{Out: &out, Err: &out}, pollInterval: 100 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			go func() {
				time.Sleep(300 * time.Millisecond)
				tc.then(f)
			}()
			err := a.waitCluster(ctx, c, "lab", tc.want, tc.deleted, 1500*time.Millisecond)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err %v, want %q", err, tc.wantErr)
			}
			var ee *exitError
			if tc.wantErr != "" && !errors.As(err, &ee) {
				t.Errorf("err %T, want an exit error", err)
			}
			if out.String() != tc.wantOut {
				t.Errorf("out %q, want %q", out.String(), tc.wantOut)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "# bash completion V2 for singlecloud", "zsh": "#compdef singlecloud"} {
		code, out, stderr := runCLI(t, t.TempDir(), "completion", shell)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("completion %s: %d %q %.100q", shell, code, stderr, out)
		}
	}
}

func TestEventLine(t *testing.T) {
	ev := event{Type: "ClusterStatusChanged", Cluster: "lab", From: "Creating", Status: "Running", Time: time.Date(2026, 1, 1, 3, 4, 5, 0, time.Local)}
	if got := eventLine(ev); got != "03:04:05 ClusterStatusChanged lab Creating -> Running" {
		t.Errorf("%q", got)
	}
	ev = event{Type: "ApplicationPhaseChanged", Environment: "lab", Application: "web", Status: "Installed", Reason: "all\nready", Time: ev.Time}
	if got := eventLine(ev); got != "03:04:05 ApplicationPhaseChanged lab/web Installed all ready" {
		t.Errorf("%q", got)
	}
}

// TestWaitClusterEventsGone: when the events stream ends for good (it
// drops and the token no longer opens it), cluster wait polls instead of
// waiting blind until its timeout.
func TestWaitClusterEventsGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		redial   int // the status of a redial of the events
		wantNote string
	}{
		{"the token stopped working", http.StatusUnauthorized, "could not be resumed"},
		{"the admin's grant is gone", http.StatusForbidden, "polling the cluster instead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				status = "Creating"
				dials  int
			)
			up := websocket.Upgrader{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/apis/ws.zcloud.cn/v1/events":
					mu.Lock()
					dials++
					first := dials == 1
					mu.Unlock()
					if !first {
						w.WriteHeader(tc.redial)
						_, _ = w.Write([]byte(`{"code":"Unauthorized","status":401,"type":"error","message":"the token is not valid"}`))
						return
					}
					conn, err := up.Upgrade(w, r, nil)
					if err != nil {
						return
					}
					_ = conn.Close() // dropped at once
				case "/apis/zcloud.cn/v1/clusters/lab":
					mu.Lock()
					s := status
					mu.Unlock()
					_, _ = w.Write([]byte(`{"name":"lab","status":"` + s + `"}`))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			c, err := newClient(srv.URL, "tok", tlsOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			a := &app{Streams: Streams{Out: &out, Err: &errb}, pollInterval: 100 * time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			time.AfterFunc(1500*time.Millisecond, func() { // after the fallback; no event says so
				mu.Lock()
				status = "Running"
				mu.Unlock()
			})
			start := time.Now()
			err = a.waitCluster(ctx, c, "lab", "Running", false, 5*time.Second)
			if err != nil || out.String() != "cluster/lab Running\n" {
				t.Errorf("err %v, out %q; want cluster/lab Running", err, out.String())
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("noticed the change after %s", d)
			}
			if !strings.Contains(errb.String(), tc.wantNote) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.wantNote)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestListWatchPrintsWhatChanged: list --watch prints the list, then per
// burst of events the clusters they named as they are now (a deleted one
// as Deleted), not the whole list again; with --only-ready, those of the
// ready list, and once more one that left it.
func TestListWatchPrintsWhatChanged(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		events     []string
		wantListed string // a cluster the first list shows
		wantRows   []string
		wantAbsent string
	}{
		{"all", nil, []string{"lab", "old", "lab"}, "old", []string{`(?m)^lab +Running`, `(?m)^old +Deleted`}, ""},
		{"only ready", []string{"--only-ready"}, []string{"lab", "old", "new"}, "old",
			[]string{`(?m)^lab +Running`, `(?m)^old +Deleted`}, "new"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := make(chan string, 10)
			var moved atomic.Bool // lab Running, old deleted, new created
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ready := r.URL.Query().Get("onlyready") == "true"
				switch r.URL.Path {
				case "/apis/ws.zcloud.cn/v1/events":
					serveEvents(w, r, events)
				case "/apis/zcloud.cn/v1/clusters":
					switch {
					case moved.Load() && ready:
						_, _ = w.Write([]byte(`{"data":[{"name":"lab","status":"Running"}]}`))
					case moved.Load():
						_, _ = w.Write([]byte(`{"data":[{"name":"lab","status":"Running"},{"name":"new","status":"Creating"}]}`))
					case ready:
						_, _ = w.Write([]byte(`{"data":[{"name":"old","status":"Running"}]}`))
					default:
						_, _ = w.Write([]byte(`{"data":[{"name":"lab","status":"Creating"},{"name":"old","status":"Running"}]}`))
					}
				case "/apis/zcloud.cn/v1/clusters/lab":
					_, _ = w.Write([]byte(`{"name":"lab","status":"Running"}`))
				case "/apis/zcloud.cn/v1/clusters/new":
					_, _ = w.Write([]byte(`{"name":"new","status":"Creating"}`))
				default:
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"code":"NotFound","status":404,"type":"error","message":"no such cluster"}`))
				}
			}))
			defer srv.Close()
			dir := loggedIn(t, srv.URL)
			out := &syncBuffer{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int)
			go func() {
				env := map[string]string{"SINGLECLOUD_CONFIG": filepath.Join(dir, "config.yaml")}
				done <- Run(ctx, append([]string{"cluster", "list", "--watch"}, tc.args...),
					Streams{In: strings.NewReader(""), Out: out, Err: out, Getenv: func(k string) string { return env[k] }})
			}()
			waitFor := func(what string) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(out.String(), what) {
					if time.Now().After(deadline) {
						t.Fatalf("no %q in:\n%s", what, out.String())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitFor(tc.wantListed)
			listed := out.String()
			moved.Store(true)
			for _, c := range tc.events {
				events <- `{"type":"ClusterStatusChanged","cluster":"` + c + `","time":"2026-01-01T00:00:00Z"}`
			}
			waitFor("Deleted")
			cancel()
			if code := <-done; code != ExitOK {
				t.Errorf("ended by its context: exit %d", code)
			}
			// The events come in one burst, or (on a busy machine) two:
			// a row per cluster and burst, never the list again.
			changes := strings.TrimPrefix(out.String(), listed)
			rows := strings.Split(strings.TrimSpace(changes), "\n")
			if len(rows) < 2 || len(rows) > 3 || strings.Contains(changes, "NAME") {
				t.Errorf("after the list:\n%s\nwant a row per changed cluster", changes)
			}
			for _, want := range tc.wantRows {
				if !regexp.MustCompile(want).MatchString(changes) {
					t.Errorf("after the list:\n%s\nwant %s", changes, want)
				}
			}
			if tc.wantAbsent != "" && strings.Contains(changes, tc.wantAbsent) {
				t.Errorf("after the list:\n%s\nwant no %s", changes, tc.wantAbsent)
			}
		})
	}
}

// serveEvents is a fake events websocket: it sends what comes on events
// until the request ends.
func serveEvents(w http.ResponseWriter, r *http.Request, events <-chan string) {
	conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	for {
		select {
		case ev := <-events:
			if conn.WriteMessage(websocket.TextMessage, []byte(ev)) != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}
