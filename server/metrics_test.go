package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	dto "github.com/prometheus/client_model/go"

	"github.com/zdnscloud/singlecloud/metrics"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// withMetrics gives the test API a real registry; onMain serves /metrics
// on the API's handler too.
func withMetrics(m *metrics.Metrics, onMain bool) func(*Options) {
	return func(o *Options) {
		o.Metrics = m
		if onMain {
			o.MetricsHandler = m.Handler()
		}
	}
}

// metricValue is the value of the sample of name whose labels include
// labels: a counter's or gauge's value, a histogram's count; -1 when
// there is none.
func metricValue(t *testing.T, m *metrics.Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue samples
				}
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				return s.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				return s.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				return float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

// waitMetric waits (bounded) until the sample has value want.
func waitMetric(t *testing.T, m *metrics.Metrics, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := metricValue(t, m, name, labels)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// /metrics on the API's listener is the admin's: 401 without a token, 403
// for another user, 200 for the admin.
func TestMetricsEndpointNeedsTheAdmin(t *testing.T) {
	m := metrics.New(metrics.Options{})
	api := newTestAPI(t, withMetrics(m, true))
	admin := api.adminToken()
	alice := api.createUser("alice", "alice-secret")
	tests := []struct {
		name, method, path, token string
		status                    int
		code                      string
	}{
		{"no token", http.MethodGet, metricsPath, "", http.StatusUnauthorized, CodeUnauthorized},
		{"a token in the query is no token here", http.MethodGet, metricsPath + "?token=" + admin, "", http.StatusUnauthorized, CodeUnauthorized},
		{"bad token", http.MethodGet, metricsPath, "not-a-jwt", http.StatusUnauthorized, CodeUnauthorized},
		{"non-admin", http.MethodGet, metricsPath, alice, http.StatusForbidden, CodePermissionDenied},
		{"admin posts", http.MethodPost, metricsPath, admin, http.StatusMethodNotAllowed, CodeMethodNotAllowed},
		{"admin", http.MethodGet, metricsPath, admin, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(tt.method, tt.path, tt.token, nil)
			if tt.code != "" {
				wantError(t, r, tt.status, tt.code)
				return
			}
			body := string(r.Body)
			if r.Status != tt.status || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") ||
				!strings.Contains(body, "# TYPE singlecloud_http_requests_total counter") || !strings.Contains(body, "go_goroutines") {
				t.Fatalf("GET /metrics as admin = %d %s\n%s", r.Status, r.Header.Get("Content-Type"), body)
			}
			// The requests above are counted by route and status class.
			if !strings.Contains(body, `singlecloud_http_requests_total{code="4xx",method="GET",route="/metrics"} 4`) {
				t.Fatalf("the refused scrapes are not counted:\n%s", body)
			}
		})
	}
}

// With a listener of its own (--metrics-listen) the API's listener answers
// 404 for /metrics, and the registry's handler asks no token.
func TestMetricsOnOwnListener(t *testing.T) {
	m := metrics.New(metrics.Options{})
	api := newTestAPI(t, withMetrics(m, false))
	admin := api.adminToken()
	wantError(t, api.do(http.MethodGet, metricsPath, admin, nil), http.StatusNotFound, CodeNotFound)
	wantError(t, api.do(http.MethodGet, metricsPath, "", nil), http.StatusUnauthorized, CodeUnauthorized)

	own := httptest.NewServer(m.Handler())
	t.Cleanup(own.Close)
	resp, err := http.Get(own.URL + metricsPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics listener without a token: %d", resp.StatusCode)
	}
	if got := metricValue(t, m, "singlecloud_http_requests_total", map[string]string{"route": metricsPath, "code": "4xx"}); got != 2 {
		t.Fatalf("the main listener's 404 and 401 for /metrics counted %v times, want 2", got)
	}
}

// Failed logins are counted by reason: a wrong password, and the throttle's
// refusal.
func TestLoginFailuresCounted(t *testing.T) {
	m := metrics.New(metrics.Options{})
	api := newTestAPI(t, withMetrics(m, false), func(o *Options) {
		o.LoginLimits = LoginLimits{UserBurst: 2, UserEvery: time.Hour}
	})
	api.adminToken()
	bad := map[string]string{"password": auth.PasswordDigest("wrong")}
	// A user never logged in from here (a success would trust the
	// address for that user, skipping the user's bucket).
	path := apiPrefix + "/users/mallory?action=login"
	var statuses []int
	for range 4 {
		statuses = append(statuses, api.do(http.MethodPost, path, "", bad).Status)
	}
	var unauthorized, throttled float64
	for _, s := range statuses {
		switch s {
		case http.StatusUnauthorized:
			unauthorized++
		case http.StatusTooManyRequests:
			throttled++
		}
	}
	if unauthorized == 0 || throttled == 0 {
		t.Fatalf("statuses of 4 wrong logins: %v; want 401s then 429s", statuses)
	}
	if got := metricValue(t, m, "singlecloud_login_failures_total", map[string]string{"reason": "bad_credentials"}); got != unauthorized {
		t.Errorf("bad_credentials = %v, want %v", got, unauthorized)
	}
	if got := metricValue(t, m, "singlecloud_login_failures_total", map[string]string{"reason": "throttled"}); got != throttled {
		t.Errorf("throttled = %v, want %v", got, throttled)
	}
}

// The websocket clients gauge counts open streams by kind.
func TestWebsocketClientsGauge(t *testing.T) {
	m := metrics.New(metrics.Options{})
	api := newTestAPI(t, withMetrics(m, false))
	admin := api.adminToken()
	url := "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/events?token=" + admin
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	events := map[string]string{"stream": "events"}
	var conns []*websocket.Conn
	for range 2 {
		conn, _, err := d.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
	}
	waitMetric(t, m, "singlecloud_websocket_clients", events, 2)
	for _, c := range conns {
		c.Close()
	}
	waitMetric(t, m, "singlecloud_websocket_clients", events, 0)
	// Each stream is counted once it ended, as a 1xx of its route.
	waitMetric(t, m, "singlecloud_http_requests_total", map[string]string{"route": wsPrefix + "/events", "code": "1xx"}, 2)
}

func TestStreamKind(t *testing.T) {
	for _, tt := range []struct{ template, want string }{
		{wsPrefix + "/clusters/{cluster}/zkelog", "zkelog"},
		{wsPrefix + "/events", "events"},
		{wsPrefix + "/environments/{env}/applications/{app}/log", "applog"},
		{wsPrefix + "/clusters/{cluster}/live", "live"},
		{wsPrefix + "/hosts/{host}/commands/{id}", "commands"},
		{"", "other"},
		{"/{a}/{b}", "other"},
	} {
		if got := streamKind(tt.template); got != tt.want {
			t.Errorf("streamKind(%q) = %q, want %q", tt.template, got, tt.want)
		}
	}
}

// recordSink keeps the records logged, with their attributes.
type recordSink struct {
	mu      sync.Mutex
	records []loggedRecord
}

type loggedRecord struct {
	level slog.Level
	msg   string
	attrs map[string]slog.Value
}

type recordHandler struct {
	sink  *recordSink
	attrs []slog.Attr
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	lr := loggedRecord{level: r.Level, msg: r.Message, attrs: map[string]slog.Value{}}
	for _, a := range h.attrs {
		lr.attrs[a.Key] = a.Value
	}
	r.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value
		return true
	})
	h.sink.mu.Lock()
	h.sink.records = append(h.sink.records, lr)
	h.sink.mu.Unlock()
	return nil
}

func (h recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return recordHandler{sink: h.sink, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h recordHandler) WithGroup(string) slog.Handler { return h }

// requests returns the access log records.
func (s *recordSink) requests() []loggedRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []loggedRecord
	for _, r := range s.records {
		if r.msg == "request" {
			out = append(out, r)
		}
	}
	return out
}

// all returns every record.
func (s *recordSink) all() []loggedRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]loggedRecord(nil), s.records...)
}

// One access log line per request: method, path without its query (where
// websocket tokens travel), route template, status, duration, bytes and
// user; probes and scrapes at Debug.
func TestAccessLog(t *testing.T) {
	sink := &recordSink{}
	m := metrics.New(metrics.Options{})
	api := newTestAPI(t, withMetrics(m, true), func(o *Options) { o.Logger = slog.New(recordHandler{sink: sink}) })
	admin := api.adminToken()
	alice := api.createUser("alice", "alice-secret")

	// A websocket stream carries the token in its query.
	wsURL := "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/events?token=" + admin
	conn, _, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	awaitRequests := func(n int) []loggedRecord {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			rs := sink.requests()
			if len(rs) >= n || time.Now().After(deadline) {
				return rs
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	before := len(awaitRequests(3)) // two logins and the stream

	tests := []struct {
		name, method, path, token string
		status                    int
		route, user               string
		level                     slog.Level
	}{
		{"list as admin, query dropped", http.MethodGet, apiPrefix + "/clusters?token=" + admin + "&q=x", admin, 200, apiPrefix + "/clusters", "admin", slog.LevelInfo},
		{"a resource", http.MethodGet, apiPrefix + "/clusters/nope", admin, 404, apiPrefix + "/clusters/{cluster}", "admin", slog.LevelInfo},
		{"a refusal", http.MethodGet, apiPrefix + "/clusters/nope", alice, 403, apiPrefix + "/clusters/{cluster}", "alice", slog.LevelInfo},
		{"no token: the route it would have taken", http.MethodGet, apiPrefix + "/clusters/lab", "", 401, apiPrefix + "/clusters/{cluster}", "", slog.LevelInfo},
		{"no route", http.MethodGet, apiPrefix + "/bogus/x", admin, 404, "unmatched", "admin", slog.LevelInfo},
		{"healthz at debug", http.MethodGet, "/healthz", "", 200, "/healthz", "", slog.LevelDebug},
		{"readyz at debug", http.MethodGet, "/readyz", "", 200, "/readyz", "", slog.LevelDebug},
		{"scrape at debug", http.MethodGet, "/metrics", admin, 200, "/metrics", "admin", slog.LevelDebug},
		{"version", http.MethodGet, versionPath, "", 200, versionPath, "", slog.LevelInfo},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(tt.method, tt.path, tt.token, nil)
			if r.Status != tt.status {
				t.Fatalf("%s %s = %d %s", tt.method, tt.path, r.Status, r.Body)
			}
			rs := awaitRequests(before + i + 1)
			if len(rs) != before+i+1 {
				t.Fatalf("%d access log lines, want %d", len(rs), before+i+1)
			}
			got := rs[len(rs)-1]
			path, _, _ := strings.Cut(tt.path, "?")
			// A scrape is gzipped on the wire (the client unzips it).
			wantBytes := int64(len(r.Body))
			if path == metricsPath {
				wantBytes = got.attrs["bytes"].Int64()
			}
			if got.level != tt.level || got.attrs["method"].String() != tt.method || got.attrs["path"].String() != path ||
				got.attrs["route"].String() != tt.route || got.attrs["status"].Int64() != int64(tt.status) ||
				got.attrs["user"].String() != tt.user || got.attrs["bytes"].Int64() != wantBytes || wantBytes == 0 {
				t.Fatalf("access log line %v %v, want %s %s route %s status %d user %q bytes %d at %v",
					got.level, got.attrs, tt.method, path, tt.route, tt.status, tt.user, len(r.Body), tt.level)
			}
			if _, ok := got.attrs["duration"]; !ok {
				t.Fatal("no duration")
			}
		})
	}

	var stream *loggedRecord
	for _, r := range sink.requests() {
		if r.attrs["path"].String() == wsPrefix+"/events" {
			stream = &r
		}
	}
	if stream == nil || stream.attrs["status"].Int64() != http.StatusSwitchingProtocols || stream.attrs["user"].String() != "admin" ||
		stream.attrs["route"].String() != wsPrefix+"/events" {
		t.Fatalf("websocket access log line %+v", stream)
	}
	// No record at all carries a token.
	for _, r := range sink.all() {
		for k, v := range r.attrs {
			if s := v.String(); strings.Contains(s, admin) || strings.Contains(s, alice) || strings.Contains(s, "token=") {
				t.Fatalf("record %q logs a token in %s: %s", r.msg, k, s)
			}
		}
	}
}
