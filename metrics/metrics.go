// Package metrics is singlecloud's Prometheus instrumentation: one
// registry, built by New, holding every singlecloud_* metric with the Go and
// process collectors, and the hooks that feed it. The other packages do not
// import Prometheus: the cluster manager calls a clustermanager.Observer,
// the server a server.Metrics, the store decorator a plain func, and
// *Metrics implements each of them, so the dependency runs one way (cmd →
// metrics → Prometheus).
//
// Every label has a bounded set of values: operation kinds, outcomes, step
// names, store operations, stream kinds, route templates, methods and
// status classes are fixed sets; no cluster, user or raw path is ever a
// label value.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric of singlecloud's own.
const namespace = "singlecloud"

// Options configures New.
type Options struct {
	// ClusterStatuses counts the clusters by status (fsm state) at
	// scrape time; nil exports no singlecloud_clusters.
	ClusterStatuses func() map[string]int
}

// Metrics is singlecloud's registry and its instruments. Its methods are
// safe for concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg *prometheus.Registry

	opsStarted   *prometheus.CounterVec
	opsEnded     *prometheus.CounterVec
	opDuration   *prometheus.HistogramVec
	stepDuration *prometheus.HistogramVec
	probeLatency prometheus.Histogram
	probeFailed  prometheus.Counter
	streams      *prometheus.GaugeVec
	storeLatency *prometheus.HistogramVec
	loginFailed  *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
}

// longBuckets are for operation and step durations, from seconds (an
// import, a quick step) to an hour (a create of many nodes pulling
// images); a new slice each call.
func longBuckets() []float64 {
	return []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}
}

// New builds a registry with the Go and process collectors and every
// singlecloud metric.
func New(opts Options) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		opsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "operations_started_total",
			Help: "Cluster operations started (including runs resumed after a restart), by kind (create, import, update, delete, ...).",
		}, []string{"kind"}),
		opsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "operations_finished_total",
			Help: "Cluster operations finished, by kind and outcome (succeeded, failed, canceled).",
		}, []string{"kind", "outcome"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "operation_duration_seconds",
			Help:    "Duration of finished cluster operations, from start to outcome, by kind.",
			Buckets: longBuckets(),
		}, []string{"kind"}),
		stepDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "operation_step_duration_seconds",
			Help:    "Duration of the installer steps that ran (skipped steps are not observed), by operation kind and step.",
			Buckets: append([]float64{0.1, 0.5}, longBuckets()...),
		}, []string{"kind", "step"}),
		probeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Name: "health_probe_duration_seconds",
			Help:    "Latency of the health probes of ready clusters (GET /readyz on their API server), failed ones included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		probeFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Name: "health_probe_failures_total",
			Help: "Health probes of ready clusters that failed (error or timeout).",
		}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "websocket_clients",
			Help: "Open websocket streams, by stream (zkelog, events, applog, ...).",
		}, []string{"stream"}),
		storeLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "store_transaction_duration_seconds",
			Help:    "Latency of store calls (a bbolt transaction each; writes include the fsync), by operation (get, list, put, delete, update, view).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"operation"}),
		loginFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "login_failures_total",
			Help: "Failed logins, by reason: bad_credentials (wrong user or password) or throttled (refused by the login throttle).",
		}, []string{"reason"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route template, method and status class (2xx, 4xx, ...; 1xx for websocket upgrades).",
		}, []string{"route", "method", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "Latency of HTTP requests other than websocket streams, by route template and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.opsStarted, m.opsEnded, m.opDuration, m.stepDuration,
		m.probeLatency, m.probeFailed, m.streams, m.storeLatency,
		m.loginFailed, m.httpRequests, m.httpDuration,
	)
	if opts.ClusterStatuses != nil {
		reg.MustRegister(&clusterCollector{
			count: opts.ClusterStatuses,
			desc: prometheus.NewDesc(namespace+"_clusters",
				"Clusters managed, by status (Running, Unreachable, Creating, Unavailable, ...), read from the cluster manager at scrape time.",
				[]string{"status"}, nil),
		})
	}
	return m
}

// Registry is the registry, for tests and for adding collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, when the scraper asks). It does not authenticate: serve it
// behind the server's admin check or on a private listener.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// clusterCollector reports singlecloud_clusters from the cluster
// manager's list at each scrape: always current, nothing to keep in step.
type clusterCollector struct {
	count func() map[string]int
	desc  *prometheus.Desc
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	for status, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), status)
	}
}

// The cluster manager's hooks (clustermanager.Observer).

// OperationStarted counts a run of an operation of kind.
func (m *Metrics) OperationStarted(kind string) {
	if m == nil {
		return
	}
	m.opsStarted.WithLabelValues(kind).Inc()
}

// OperationEnded counts an operation's outcome and observes its duration;
// d < 0 means unknown (a run that had no operation record to end).
func (m *Metrics) OperationEnded(kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.opsEnded.WithLabelValues(kind, outcome).Inc()
	if d >= 0 {
		m.opDuration.WithLabelValues(kind).Observe(d.Seconds())
	}
}

// StepEnded observes the duration of an installer step.
func (m *Metrics) StepEnded(kind, step string, d time.Duration) {
	if m == nil {
		return
	}
	m.stepDuration.WithLabelValues(kind, step).Observe(d.Seconds())
}

// ProbeDone observes a health probe's latency and counts it when it
// failed.
func (m *Metrics) ProbeDone(d time.Duration, err error) {
	if m == nil {
		return
	}
	m.probeLatency.Observe(d.Seconds())
	if err != nil {
		m.probeFailed.Inc()
	}
}

// The store decorator's hook (storage.Instrument).

// StoreDone observes the latency of one store call; op is get, list, put,
// delete, update or view.
func (m *Metrics) StoreDone(op string, d time.Duration) {
	if m == nil {
		return
	}
	m.storeLatency.WithLabelValues(op).Observe(d.Seconds())
}

// The server's hooks (server.Metrics).

// StreamOpened counts an open websocket stream of kind stream.
func (m *Metrics) StreamOpened(stream string) {
	if m == nil {
		return
	}
	m.streams.WithLabelValues(stream).Inc()
}

// StreamClosed uncounts a websocket stream StreamOpened counted.
func (m *Metrics) StreamClosed(stream string) {
	if m == nil {
		return
	}
	m.streams.WithLabelValues(stream).Dec()
}

// LoginFailed counts a failed login; reason is bad_credentials or
// throttled.
func (m *Metrics) LoginFailed(reason string) {
	if m == nil {
		return
	}
	m.loginFailed.WithLabelValues(reason).Inc()
}

// RequestDone counts an answered HTTP request by route template, method
// and status class, and observes its latency unless it was a websocket
// stream (status 101), whose duration is the stream's life.
func (m *Metrics) RequestDone(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	method = boundedMethod(method)
	m.httpRequests.WithLabelValues(route, method, statusClass(status)).Inc()
	if status != http.StatusSwitchingProtocols {
		m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
	}
}

// boundedMethod keeps the method label to the standard methods: a client
// may send any token as a method.
func boundedMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// statusClass is "2xx" for 200–299 and so on.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
