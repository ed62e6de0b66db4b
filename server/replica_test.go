package server

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// replicaFront serves NewReplica with the leader and local handler the
// test sets, and the sealer of a fresh key.
type replicaFront struct {
	URL    string
	leader atomic.Pointer[string]
	local  atomic.Pointer[http.Handler]
	sealer storage.Sealer
}

func newReplicaFront(t *testing.T) *replicaFront {
	t.Helper()
	sealer, err := storage.LoadOrCreateKey(filepath.Join(t.TempDir(), "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	f := &replicaFront{sealer: sealer}
	h, err := NewReplica(ReplicaOptions{
		Version: VersionInfo{Version: "v1"},
		Self:    "http://follower.test",
		Leader: func() string {
			if l := f.leader.Load(); l != nil {
				return *l
			}
			return ""
		},
		Local: func() http.Handler {
			if h := f.local.Load(); h != nil {
				return *h
			}
			return nil
		},
		Sealer: sealer,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	f.URL = hs.URL
	return f
}

func (f *replicaFront) setLeader(url string) { f.leader.Store(&url) }

func call(t *testing.T, method, url string, header http.Header) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	return resp.StatusCode, resp.Header, body
}

// TestReplicaFront: a replica answers /version and /readyz itself with the
// leader, serves locally while it leads, forwards to the leader otherwise
// (with the client's address sealed for the leader's login throttle), and
// answers 503 NoLeader while no leader can answer, or 502 when the leader
// does not.
func TestReplicaFront(t *testing.T) {
	f := newReplicaFront(t)
	var got atomic.Pointer[http.Request]
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer leader.Close()

	status, hdr, body := call(t, http.MethodGet, f.URL+apiPrefix+"/clusters", nil)
	if status != http.StatusServiceUnavailable || body["code"] != CodeNoLeader || hdr.Get("Retry-After") == "" ||
		!strings.Contains(str(body["message"]), "no singlecloud replica leads") {
		t.Fatalf("without a leader: %d %v %v", status, hdr, body)
	}
	if _, _, v := call(t, http.MethodGet, f.URL+readyzPath, nil); v["leading"] != false || v["leader"] != nil {
		t.Fatalf("readyz without a leader: %v", v)
	}

	f.setLeader(leader.URL)
	// Without the admin's token (here: no copy of the store to check
	// one on), /version shows the build and no replica's address.
	if _, _, v := call(t, http.MethodGet, f.URL+versionPath, nil); v["version"] != "v1" || v["leader"] != nil || v["replica"] != nil {
		t.Fatalf("version: %v", v)
	}
	// /readyz says whether this replica leads, and names the leader to
	// the admin only, as /version does.
	if _, _, v := call(t, http.MethodGet, f.URL+readyzPath, nil); v["leading"] != false || v["leader"] != nil {
		t.Fatalf("readyz: %v", v)
	}
	forged := http.Header{forwardedClientHeader: {"forged"}, "Authorization": {"Bearer tok"}}
	if status, _, _ := call(t, http.MethodGet, f.URL+apiPrefix+"/clusters?x=1", forged); status != http.StatusTeapot {
		t.Fatalf("forwarded: %d, want the leader's 418", status)
	}
	r := got.Load()
	if r == nil || r.URL.RequestURI() != apiPrefix+"/clusters?x=1" || r.Header.Get("Authorization") != "Bearer tok" ||
		r.Header.Get(forwardedHeader) != "http://follower.test" || r.Header.Get("X-Forwarded-For") == "" {
		t.Fatalf("the leader got %+v", r)
	}
	// The leader reads the client's address from the sealed header, not
	// the one the client forged (forwardedclient_test.go has the rest).
	s := forwardedLeader(t, f.sealer, &testClock{t: time.Now()}, io.Discard)
	req := r.Clone(r.Context())
	req.RemoteAddr = "10.1.1.1:1"
	if a := s.clientAddr(req); !strings.HasPrefix(a, "127.0.0.1:") {
		t.Errorf("client address through the follower = %q, want the client's 127.0.0.1:…", a)
	}

	// A request another replica forwarded is not forwarded again.
	status, _, body = call(t, http.MethodGet, f.URL+apiPrefix+"/clusters", http.Header{forwardedHeader: {"http://other.test"}})
	if status != http.StatusServiceUnavailable || !strings.Contains(str(body["message"]), "leadership is changing") {
		t.Fatalf("a forwarded request at a follower: %d %v", status, body)
	}
	// This replica elected, not loaded yet; then serving locally.
	f.setLeader("http://follower.test")
	if status, _, body := call(t, http.MethodGet, f.URL+apiPrefix+"/clusters", nil); status != http.StatusServiceUnavailable ||
		!strings.Contains(str(body["message"]), "loading") {
		t.Fatalf("elected, loading: %d %v", status, body)
	}
	var local http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	f.local.Store(&local)
	if status, _, _ := call(t, http.MethodGet, f.URL+apiPrefix+"/clusters", nil); status != http.StatusAccepted {
		t.Fatalf("leading: %d, want the local handler's 202", status)
	}
	// A leader that does not answer.
	f.local.Store(nil)
	leader.Close()
	f.setLeader(leader.URL)
	// Its port refuses: nothing was delivered, so 503, to send again.
	if status, h, body := call(t, http.MethodGet, f.URL+apiPrefix+"/clusters", nil); status != http.StatusServiceUnavailable ||
		body["code"] != CodeNoLeader || h.Get("Retry-After") == "" {
		t.Fatalf("a dead leader: %d %v (Retry-After %q)", status, body, h.Get("Retry-After"))
	}
}

func str(v any) string { s, _ := v.(string); return s }
