package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scrape GETs m's handler over real loopback HTTP and returns the text.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return string(body)
}

// Each hook moves its metric, as a scrape of the real handler shows.
func TestHooksShowInScrape(t *testing.T) {
	tests := []struct {
		name   string
		opts   Options
		drive  func(m *Metrics)
		want   []string // exact sample lines (or HELP/TYPE lines)
		absent []string // substrings that must not appear
	}{
		{
			name: "operations",
			drive: func(m *Metrics) {
				m.OperationStarted("create")
				m.OperationStarted("create")
				m.OperationStarted("import")
				m.OperationEnded("create", "succeeded", 90*time.Second)
				m.OperationEnded("create", "failed", 3*time.Second)
				m.OperationEnded("import", "succeeded", -1) // duration unknown
			},
			want: []string{
				"# TYPE singlecloud_operations_started_total counter",
				`singlecloud_operations_started_total{kind="create"} 2`,
				`singlecloud_operations_started_total{kind="import"} 1`,
				`singlecloud_operations_finished_total{kind="create",outcome="succeeded"} 1`,
				`singlecloud_operations_finished_total{kind="create",outcome="failed"} 1`,
				`singlecloud_operations_finished_total{kind="import",outcome="succeeded"} 1`,
				"# TYPE singlecloud_operation_duration_seconds histogram",
				`singlecloud_operation_duration_seconds_count{kind="create"} 2`,
				`singlecloud_operation_duration_seconds_sum{kind="create"} 93`,
				`singlecloud_operation_duration_seconds_bucket{kind="create",le="5"} 1`,
				`singlecloud_operation_duration_seconds_bucket{kind="create",le="120"} 2`,
			},
			absent: []string{`singlecloud_operation_duration_seconds_count{kind="import"}`},
		},
		{
			name: "steps",
			drive: func(m *Metrics) {
				m.StepEnded("create", "etcd", 20*time.Second)
				m.StepEnded("create", "etcd", 40*time.Second)
				m.StepEnded("update", "workers", 200*time.Millisecond)
			},
			want: []string{
				"# TYPE singlecloud_operation_step_duration_seconds histogram",
				`singlecloud_operation_step_duration_seconds_count{kind="create",step="etcd"} 2`,
				`singlecloud_operation_step_duration_seconds_sum{kind="create",step="etcd"} 60`,
				`singlecloud_operation_step_duration_seconds_bucket{kind="create",step="etcd",le="30"} 1`,
				`singlecloud_operation_step_duration_seconds_bucket{kind="update",step="workers",le="0.5"} 1`,
			},
		},
		{
			name: "health probes",
			drive: func(m *Metrics) {
				m.ProbeDone(20*time.Millisecond, nil)
				m.ProbeDone(5*time.Second, errors.New("timeout"))
				m.ProbeDone(30*time.Millisecond, errors.New("refused"))
			},
			want: []string{
				"singlecloud_health_probe_duration_seconds_count 3",
				`singlecloud_health_probe_duration_seconds_bucket{le="0.025"} 1`,
				"singlecloud_health_probe_failures_total 2",
			},
		},
		{
			name: "websocket clients",
			drive: func(m *Metrics) {
				m.StreamOpened("zkelog")
				m.StreamOpened("zkelog")
				m.StreamOpened("events")
				m.StreamClosed("zkelog")
			},
			want: []string{
				"# TYPE singlecloud_websocket_clients gauge",
				`singlecloud_websocket_clients{stream="zkelog"} 1`,
				`singlecloud_websocket_clients{stream="events"} 1`,
			},
		},
		{
			name: "store and logins",
			drive: func(m *Metrics) {
				m.StoreDone("get", time.Millisecond)
				m.StoreDone("update", 4*time.Millisecond)
				m.StoreDone("update", 6*time.Millisecond)
				m.LoginFailed("bad_credentials")
				m.LoginFailed("bad_credentials")
				m.LoginFailed("throttled")
			},
			want: []string{
				`singlecloud_store_transaction_duration_seconds_count{operation="get"} 1`,
				`singlecloud_store_transaction_duration_seconds_count{operation="update"} 2`,
				`singlecloud_login_failures_total{reason="bad_credentials"} 2`,
				`singlecloud_login_failures_total{reason="throttled"} 1`,
			},
		},
		{
			name: "http requests",
			drive: func(m *Metrics) {
				m.RequestDone("/apis/zcloud.cn/v1/clusters", "GET", 200, 2*time.Millisecond)
				m.RequestDone("/apis/zcloud.cn/v1/clusters", "GET", 204, 2*time.Millisecond)
				m.RequestDone("/apis/zcloud.cn/v1/clusters/{cluster}", "DELETE", 404, time.Millisecond)
				m.RequestDone("/apis/ws.zcloud.cn/v1/events", "GET", 101, time.Hour) // a stream: no latency
				m.RequestDone("unmatched", "BREW", 405, time.Millisecond)
			},
			want: []string{
				`singlecloud_http_requests_total{code="2xx",method="GET",route="/apis/zcloud.cn/v1/clusters"} 2`,
				`singlecloud_http_requests_total{code="4xx",method="DELETE",route="/apis/zcloud.cn/v1/clusters/{cluster}"} 1`,
				`singlecloud_http_requests_total{code="1xx",method="GET",route="/apis/ws.zcloud.cn/v1/events"} 1`,
				`singlecloud_http_requests_total{code="4xx",method="other",route="unmatched"} 1`,
				`singlecloud_http_request_duration_seconds_count{method="GET",route="/apis/zcloud.cn/v1/clusters"} 2`,
			},
			absent: []string{`singlecloud_http_request_duration_seconds_count{method="GET",route="/apis/ws.zcloud.cn/v1/events"}`, "BREW"},
		},
		{
			name: "clusters by status, read at scrape time",
			opts: Options{ClusterStatuses: func() map[string]int { return map[string]int{"Running": 3, "Creating": 1} }},
			want: []string{
				"# HELP singlecloud_clusters Clusters managed, by status",
				"# TYPE singlecloud_clusters gauge",
				`singlecloud_clusters{status="Running"} 3`,
				`singlecloud_clusters{status="Creating"} 1`,
			},
		},
		{
			name:   "no cluster counter",
			absent: []string{"singlecloud_clusters"},
		},
		{
			name: "runtime and process collectors",
			want: []string{"# TYPE go_goroutines gauge", "# TYPE process_resident_memory_bytes gauge"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(tt.opts)
			if tt.drive != nil {
				tt.drive(m)
			}
			text := scrape(t, m)
			lines := strings.Split(text, "\n")
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					if l == w || strings.HasPrefix(w, "# HELP") && strings.HasPrefix(l, w) {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("scrape lacks %q", w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(text, a) {
					t.Errorf("scrape has %q", a)
				}
			}
			if t.Failed() {
				t.Logf("scrape:\n%s", text)
			}
		})
	}
}

// Every singlecloud metric has HELP text, the singlecloud_ prefix and
// passes promlint.
func TestMetricsAreDocumentedAndLint(t *testing.T) {
	m := New(Options{ClusterStatuses: func() map[string]int { return map[string]int{"Running": 1} }})
	// Give every vector a child so that it is gathered.
	m.OperationStarted("create")
	m.OperationEnded("create", "succeeded", time.Second)
	m.StepEnded("create", "etcd", time.Second)
	m.ProbeDone(time.Millisecond, nil)
	m.StreamOpened("events")
	m.StoreDone("get", time.Millisecond)
	m.LoginFailed("throttled")
	m.RequestDone("/healthz", "GET", 200, time.Millisecond)
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours int
	for _, f := range families {
		name := f.GetName()
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		ours++
		if !strings.HasPrefix(name, "singlecloud_") || f.GetHelp() == "" {
			t.Errorf("metric %s: want the singlecloud_ prefix and HELP text (help %q)", name, f.GetHelp())
		}
	}
	if ours != 12 {
		t.Errorf("gathered %d singlecloud metrics, want 12", ours)
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "singlecloud_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// Two registries do not share state: New keeps nothing at package level.
func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(Options{}), New(Options{})
	a.LoginFailed("throttled")
	if got := testutil.ToFloat64(b.loginFailed.WithLabelValues("throttled")); got != 0 {
		t.Fatalf("a second registry sees %v login failures of the first", got)
	}
	if got := testutil.ToFloat64(a.loginFailed.WithLabelValues("throttled")); got != 1 {
		t.Fatalf("login failures = %v, want 1", got)
	}
}

// A nil *Metrics records nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.OperationStarted("create")
	m.OperationEnded("create", "failed", time.Second)
	m.StepEnded("create", "etcd", time.Second)
	m.ProbeDone(time.Second, nil)
	m.StreamOpened("events")
	m.StreamClosed("events")
	m.StoreDone("get", time.Second)
	m.LoginFailed("throttled")
	m.RequestDone("/healthz", "GET", 200, time.Second)
}

func TestStatusClassAndMethod(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   string
	}{{101, "1xx"}, {200, "2xx"}, {302, "3xx"}, {404, "4xx"}, {503, "5xx"}, {0, "other"}, {600, "other"}} {
		if got := statusClass(tt.status); got != tt.want {
			t.Errorf("statusClass(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{{"GET", "GET"}, {"DELETE", "DELETE"}, {"get", "other"}, {"X-EVIL", "other"}} {
		if got := boundedMethod(tt.in); got != tt.want {
			t.Errorf("boundedMethod(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
