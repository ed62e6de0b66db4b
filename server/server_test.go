package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// testAdminPassword is the plaintext admin password of every test API.
const testAdminPassword = "admin-secret"

// testClock is the settable clock the test API's tokens run on.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testAPI is a real Server over a real bbolt file, served on loopback.
type testAPI struct {
	t      *testing.T
	URL    string
	DB     *storage.Bolt
	Users  *auth.Users
	Tokens *auth.Tokens
	Clock  *testClock
	Server *Server
	Log    *syncBuffer
}

// newTestAPI starts a server whose admin has testAdminPassword; edit
// adjusts its Options before New.
func newTestAPI(t *testing.T, edit ...func(*Options)) *testAPI {
	t.Helper()
	db := storagetest.Open(t)
	users, err := auth.NewUsers(db, auth.UsersOptions{HashCost: bcrypt.MinCost})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.EnsureAdmin(testAdminPassword); err != nil {
		t.Fatal(err)
	}
	clock := &testClock{t: time.Now()}
	tokens, err := auth.NewTokens(db, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	bus := pubsub.New(pubsub.Options{})
	t.Cleanup(bus.Close)
	mgr, err := clustermanager.New(clustermanager.Options{Store: db, Sealer: db.Sealer(), Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	opts := Options{
		Users:    users,
		Tokens:   tokens,
		Clusters: mgr,
		Bus:      bus,
		Logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, e := range edit {
		e(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return &testAPI{t: t, URL: hs.URL, DB: db, Users: users, Tokens: tokens, Clock: clock, Server: srv, Log: logs}
}

// response is one answer of the test API.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value for exact comparisons.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response body %q is not a JSON object: %v", r.Body, err)
	}
	return m
}

// do sends a request with an optional token ("" for none) and body: a
// string is sent as is, anything else as JSON, nil as no body.
func (a *testAPI) do(method, path, token string, body any) response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return a.send(req)
}

// send runs req with a bounded client.
func (a *testAPI) send(req *http.Request) response {
	a.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// login returns a token for name, failing the test on a refusal.
func (a *testAPI) login(name, password string) string {
	a.t.Helper()
	r := a.do(http.MethodPost, apiPrefix+"/users/"+name+"?action=login", "", map[string]string{"password": auth.PasswordDigest(password)})
	if r.Status != http.StatusOK {
		a.t.Fatalf("login %s: %d %s", name, r.Status, r.Body)
	}
	var out struct{ Token string }
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Token == "" {
		a.t.Fatalf("login %s: body %s: %v", name, r.Body, err)
	}
	return out.Token
}

// adminToken logs in as admin.
func (a *testAPI) adminToken() string { return a.login(auth.AdminName, testAdminPassword) }

// createUser creates a user through the store and returns its token.
func (a *testAPI) createUser(name, password string, projects ...auth.Project) string {
	a.t.Helper()
	if _, err := a.Users.Create(auth.User{Name: name, Projects: projects}, auth.PasswordDigest(password)); err != nil {
		a.t.Fatal(err)
	}
	return a.login(name, password)
}

// wantError checks that r is exactly singlecloud's error envelope with
// status and code, and that its message contains every fragment.
func wantError(t *testing.T, r response, status int, code string, fragments ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	m := r.JSON(t)
	msg, _ := m["message"].(string)
	want := map[string]any{"code": code, "status": float64(status), "type": "error", "message": msg}
	if f, ok := m["fields"]; ok && status == http.StatusUnprocessableEntity {
		want["fields"] = f // a 422 about fields lists them (TestValidationErrorsListTheirFields)
	}
	if !jsonEqual(m, want) || msg == "" {
		t.Fatalf("error body = %s, want code %s, status %d, type error and a message", r.Body, code, status)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Fatalf("error message %q does not contain %q", msg, f)
		}
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
}

// jsonEqual compares decoded JSON values.
func jsonEqual(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return bytes.Equal(ra, rb)
}
