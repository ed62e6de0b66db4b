package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
)

// forwardedLeader is the leader's side of forwardedclient.go, opening
// headers with sealer on clock, logging to log.
func forwardedLeader(t *testing.T, sealer Sealer, clock *testClock, log io.Writer) *Server {
	t.Helper()
	logins, err := newLoginThrottle(LoginLimits{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return &Server{opts: Options{ReplicaSealer: sealer}, logins: logins,
		log:             slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		forwardedNonces: newNonceMemory(forwardedNonceTTL, forwardedNonceCap)}
}

func testSealer(t *testing.T, name string) storage.Sealer {
	t.Helper()
	s, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestForwardedClientHeader: the leader takes the client's address from a
// header sealed for this very request, recently, once; any other header
// leaves the connection's address (the follower's).
func TestForwardedClientHeader(t *testing.T) {
	const client, follower = "192.0.2.7:4000", "10.1.1.1:1"
	login := apiPrefix + "/users/admin?action=login"
	sealer, other := testSealer(t, "seal.key"), testSealer(t, "other.key")
	seal := func(s Sealer, method, uri string, at time.Time) string {
		h, err := sealClient(s, client, httptest.NewRequest(method, uri, nil), at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	now := time.Now()
	oldFormat, _ := sealer.Seal([]byte(strconv.FormatInt(now.Unix(), 10)+" "+client),
		[]byte("singlecloud forwarded client"))
	tests := []struct {
		name   string
		header string
		// method and uri of the request the header comes with.
		method, uri string
		// usedBefore: the same header came with an earlier request.
		usedBefore bool
		want       string
	}{
		{name: "valid", header: seal(sealer, http.MethodPost, login, now), want: client},
		{name: "valid, sealed 59 s ago", header: seal(sealer, http.MethodPost, login, now.Add(-forwardedClientMaxAge+time.Second)), want: client},
		{name: "replayed", header: seal(sealer, http.MethodPost, login, now), usedBefore: true, want: follower},
		{name: "moved to another path", header: seal(sealer, http.MethodPost, apiPrefix+"/users/bob?action=login", now), want: follower},
		{name: "moved to another query", header: seal(sealer, http.MethodPost, apiPrefix+"/users/admin?action=resetPassword", now), want: follower},
		{name: "moved to another method", header: seal(sealer, http.MethodGet, login, now), want: follower},
		{name: "stale", header: seal(sealer, http.MethodPost, login, now.Add(-forwardedClientMaxAge-time.Second)), want: follower},
		{name: "from the future", header: seal(sealer, http.MethodPost, login, now.Add(forwardedClientMaxAge+time.Second)), want: follower},
		{name: "another key", header: seal(other, http.MethodPost, login, now), want: follower},
		{name: "an earlier release's format", header: base64.RawURLEncoding.EncodeToString(oldFormat), want: follower},
		{name: "forged", header: base64.RawURLEncoding.EncodeToString([]byte(client)), want: follower},
		{name: "not base64", header: "%%%", want: follower},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncBuffer
			s := forwardedLeader(t, sealer, &testClock{t: now}, &logs)
			at := func() string {
				req := httptest.NewRequest(orDefault(tt.method, http.MethodPost), orDefault(tt.uri, login), nil)
				req.RemoteAddr = follower
				req.Header.Set(forwardedClientHeader, tt.header)
				return s.clientAddr(req)
			}
			if tt.usedBefore {
				if got := at(); got != client {
					t.Fatalf("first use: %q, want %q", got, client)
				}
			}
			if got := at(); got != tt.want {
				t.Fatalf("client address %q, want %q", got, tt.want)
			}
			if strings.Contains(logs.String(), tt.header) {
				t.Fatalf("the log shows the header: %s", logs.String())
			}
			if tt.want == follower && !strings.Contains(logs.String(), "forwarded client header refused") {
				t.Fatalf("the refusal is not logged: %q", logs.String())
			}
		})
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// TestNonceMemory: a nonce is refused while remembered; the memory never
// holds more than its capacity (it refuses instead) and forgets a nonce
// after its ttl, making room again.
func TestNonceMemory(t *testing.T) {
	now := time.Now()
	m := newNonceMemory(time.Minute, 2)
	for i, s := range []struct {
		nonce string
		at    time.Duration
		want  error
	}{
		{"a", 0, nil},
		{"a", 59 * time.Second, errForwardedReplayed},
		{"b", time.Second, nil},
		{"c", 2 * time.Second, errForwardedFull},
		{"c", time.Minute, nil}, // a expired: room for c
		{"b", time.Minute, errForwardedReplayed},
		{"a", time.Minute, errForwardedFull}, // b and c held
		{"a", 61 * time.Second, nil},         // b expired
	} {
		if err := m.use(s.nonce, now.Add(s.at)); !errors.Is(err, s.want) {
			t.Fatalf("step %d: use(%q) at +%s = %v, want %v", i, s.nonce, s.at, err, s.want)
		}
	}
	if len(m.seen) != 2 || len(m.queue) != 2 {
		t.Fatalf("remembered %d nonces (queue %d), want 2", len(m.seen), len(m.queue))
	}
}

// TestForwardedClientThroughTheFollower forwards real logins through a
// replica's front (a client on 127.0.0.2, the follower's connections from
// 127.0.0.1) to a real leader: the leader throttles the client's address,
// not the follower's; a header copied off the link and sent again, or
// moved to another request, counts against the sender's own address, so
// replayed failures never lock the victim out.
func TestForwardedClientThroughTheFollower(t *testing.T) {
	sealer := testSealer(t, "seal.key")
	clock := &testClock{t: time.Now()}
	leader := newTestAPI(t, func(o *Options) { o.ReplicaSealer, o.LoginLimits.Clock = sealer, clock.Now })
	// The link between the replicas, where an attacker copies headers.
	type copied struct{ method, uri, header string }
	var last atomic.Pointer[copied]
	link := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last.Store(&copied{r.Method, r.RequestURI, r.Header.Get(forwardedClientHeader)})
		leader.Server.Handler().ServeHTTP(w, r)
	}))
	defer link.Close()
	front, err := NewReplica(ReplicaOptions{Self: "http://follower.test", Leader: func() string { return link.URL },
		Local: func() http.Handler { return nil }, Sealer: sealer})
	if err != nil {
		t.Fatal(err)
	}
	follower := httptest.NewServer(front)
	defer follower.Close()
	victim := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}

	loginPath := apiPrefix + "/users/admin?action=login"
	login := func(c *http.Client, base, password, header string) int {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"password": auth.PasswordDigest(password)})
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+loginPath, strings.NewReader(string(body)))
		if header != "" {
			req.Header.Set(forwardedClientHeader, header)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := login(victim, follower.URL, "wrong", ""); status != http.StatusUnauthorized {
		t.Fatalf("the victim's failed login through the follower: %d", status)
	}
	captured := last.Load()
	if captured == nil || captured.header == "" || captured.uri != loginPath {
		t.Fatalf("the follower sent %+v", captured)
	}
	// The attacker replays the header with wrong passwords: they count
	// against its own address (the one the follower uses too), not the
	// victim's.
	attacker := &http.Client{Timeout: 30 * time.Second}
	for range DefaultAddrLoginBurst {
		if status := login(attacker, leader.URL, "guess", captured.header); status != http.StatusUnauthorized {
			t.Fatalf("replayed failed login: %d", status)
		}
	}
	if status := login(attacker, leader.URL, "guess", captured.header); status != http.StatusTooManyRequests {
		t.Fatalf("the attacker's address after %d failures: %d, want 429", DefaultAddrLoginBurst, status)
	}
	// Moved to a request of another path, the header is refused too.
	if status, _, _ := call(t, http.MethodGet, follower.URL+apiPrefix+"/clusters", nil); status != http.StatusUnauthorized {
		t.Fatalf("forwarded list without a token: %d", status)
	}
	moved := last.Load()
	if status := login(attacker, leader.URL, "guess", moved.header); status != http.StatusTooManyRequests {
		t.Fatalf("a header moved to a login: %d, want the attacker's own 429", status)
	}
	// The victim, through the follower (whose own address is throttled
	// now), is judged by its own address: one failure, not throttled.
	if status := login(victim, follower.URL, testAdminPassword, ""); status != http.StatusOK {
		t.Fatalf("the victim's login through the follower: %d, want 200", status)
	}
	logs := leader.Log.String()
	for _, want := range []string{errForwardedReplayed.Error(), errForwardedMoved.Error()} {
		if !strings.Contains(logs, want) {
			t.Errorf("the leader's log does not say %q", want)
		}
	}
	if strings.Contains(logs, captured.header) || strings.Contains(logs, moved.header) {
		t.Error("the leader's log shows a sealed header")
	}
}
