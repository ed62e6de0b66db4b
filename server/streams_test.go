package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestStreamRegistryBounds: the registry admits a stream until its user,
// its address or the whole server holds its bound, and a release frees
// the place.
func TestStreamRegistryBounds(t *testing.T) {
	st := newStreams(StreamLimits{PerUser: 2, PerAddress: 3, Total: 4}, systemAlarms{})
	noop := func(error) {}
	admitted := map[string]*streamEntry{}
	steps := []struct {
		id, user, addr string
		want           streamBound // "" when admitted
		release        string      // an admitted id to release first
	}{
		{id: "a1", user: "ann", addr: "10.0.0.1"},
		{id: "a2", user: "ann", addr: "10.0.0.1"},
		{id: "a3", user: "ann", addr: "10.0.0.2", want: boundUser},
		{id: "b1", user: "bob", addr: "10.0.0.1"},
		{id: "b2", user: "bob", addr: "10.0.0.1", want: boundAddress},
		{id: "b3", user: "bob", addr: "10.0.0.2"},
		{id: "c1", user: "carl", addr: "10.0.0.3", want: boundTotal},
		{id: "c2", user: "carl", addr: "10.0.0.3", release: "a1"},
		{id: "a4", user: "ann", addr: "10.0.0.2", want: boundTotal},
	}
	for _, s := range steps {
		if s.release != "" {
			st.release(admitted[s.release])
		}
		e, err := st.admit(s.user, "stamp", s.addr, noop)
		var le *streamLimitError
		switch {
		case s.want == "" && err != nil:
			t.Fatalf("%s: admit %s from %s: %v", s.id, s.user, s.addr, err)
		case s.want == "":
			admitted[s.id] = e
		case !errors.As(err, &le) || le.bound != s.want:
			t.Fatalf("%s: admit %s from %s = %v, want the %s bound", s.id, s.user, s.addr, err, s.want)
		case !strings.Contains(err.Error(), string(s.want)+" limit"):
			t.Fatalf("%s: message %q does not name the %s limit", s.id, err, s.want)
		}
	}
	for _, e := range admitted {
		if e != admitted["a1"] {
			st.release(e)
		}
	}
	if st.total != 0 || len(st.users) != 0 || len(st.addrs) != 0 {
		t.Fatalf("after every release: total %d, users %v, addresses %v", st.total, st.users, st.addrs)
	}
}

// TestStreamLimitsDefaults: zero fields take the defaults, the total
// half the open files limit and at most DefaultMaxStreams.
func TestStreamLimitsDefaults(t *testing.T) {
	for _, tc := range []struct {
		files uint64
		total int
	}{{0, DefaultMaxStreams}, {1, 1}, {1024, 512}, {1 << 20, DefaultMaxStreams}} {
		l := DefaultStreamLimits(tc.files)
		if l.PerUser != DefaultStreamsPerUser || l.PerAddress != DefaultStreamsPerAddress || l.Total != tc.total {
			t.Errorf("DefaultStreamLimits(%d) = %+v, want total %d", tc.files, l, tc.total)
		}
	}
	if _, err := New(Options{StreamLimits: StreamLimits{PerUser: -1}}); err == nil || !strings.Contains(err.Error(), "StreamLimits") {
		t.Errorf("a negative limit: %v", err)
	}
}

// eventsURL is the events websocket of api for token.
func eventsURL(api *testAPI, token string) string {
	return "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/events?token=" + url.QueryEscape(token)
}

// dialEvents opens the events stream with token; the test ends it.
func dialEvents(t *testing.T, api *testAPI, token string) *websocket.Conn {
	t.Helper()
	conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(eventsURL(api, token), nil)
	if err != nil {
		t.Fatalf("dial events: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// refusedDial dials the events stream with token and returns the answer
// of a refused upgrade; it fails the test if the upgrade succeeds.
func refusedDial(t *testing.T, api *testAPI, token string) response {
	t.Helper()
	conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(eventsURL(api, token), nil)
	if err == nil {
		conn.Close()
		t.Fatal("the stream was accepted, want a refusal before the upgrade")
	}
	if resp == nil {
		t.Fatalf("dial events: %v, without an HTTP answer", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// A stream beyond a bound is refused before the upgrade with a 429 in the
// usual envelope, a Retry-After, and a message naming the bound.
func TestStreamBeyondABoundIsRefusedBeforeTheUpgrade(t *testing.T) {
	tests := []struct {
		name   string
		limits StreamLimits
		open   []string // users with one stream open each
		user   string   // who is refused
		want   string
	}{
		{"per user", StreamLimits{PerUser: 1}, []string{"ann"}, "ann", "per user limit"},
		{"per address", StreamLimits{PerAddress: 2}, []string{"ann", "bob"}, "carl", "per address limit"},
		{"total", StreamLimits{Total: 1}, []string{"ann"}, "bob", "total limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newTestAPI(t, func(o *Options) { o.StreamLimits = tc.limits })
			tokens := map[string]string{}
			for _, u := range []string{"ann", "bob", "carl"} {
				tokens[u] = api.createUser(u, u+"-secret")
			}
			var held []*websocket.Conn
			for _, u := range tc.open {
				held = append(held, dialEvents(t, api, tokens[u]))
			}
			r := refusedDial(t, api, tokens[tc.user])
			wantError(t, r, http.StatusTooManyRequests, CodeTooManyRequests, tc.want, "close", "retry in 5 s")
			if ra := r.Header.Get("Retry-After"); ra != "5" {
				t.Errorf("Retry-After = %q, want 5", ra)
			}
			// A stream closed frees its place once the server notices.
			held[0].Close()
			deadline := time.Now().Add(streamEndBound)
			for {
				conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(eventsURL(api, tokens[tc.user]), nil)
				if err == nil {
					conn.Close()
					break
				}
				if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
					t.Fatalf("a stream after one closed: %v (%v)", err, resp)
				}
				resp.Body.Close()
			}
		})
	}
}

// probeLatencies times GETs of /healthz, /readyz and the admin's user
// list, in turn, until n are done, ctx ends or stop is closed; each must
// answer 200.
func probeLatencies(ctx context.Context, t *testing.T, api *testAPI, admin string, n int, stop <-chan struct{}) []time.Duration {
	client := &http.Client{Timeout: 10 * time.Second}
	paths := []string{healthzPath, readyzPath, apiPrefix + "/users"}
	var out []time.Duration
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case <-stop:
			return out
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.URL+paths[i%len(paths)], nil)
		if err != nil {
			t.Error(err)
			return out
		}
		req.Header.Set("Authorization", "Bearer "+admin)
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("probe %s: %v", req.URL.Path, err)
			return out
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out = append(out, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe %s = %d", req.URL.Path, resp.StatusCode)
			return out
		}
	}
	return out
}

// median is the p50 of ds.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
