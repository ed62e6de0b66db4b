package clustermanager_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// unreachableKubeconfig points at a loopback port nothing listens on, so
// reloaded clusters stay Connecting and their connectors keep retrying in
// the background, as they would for clusters that are down.
func unreachableKubeconfig(int) string {
	return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
}

// stack is the server wired as cmd/singlecloud wires it, on store.
type stack struct {
	srv   *httptest.Server
	bus   *pubsub.Bus
	m     *clustermanager.Manager
	token string
	stop  func()
}

func startStack(tb testing.TB, store *storage.Bolt) *stack {
	tb.Helper()
	bus := pubsub.New(pubsub.Options{})
	m, err := clustermanager.New(clustermanager.Options{Store: store, Sealer: store.Sealer(), Bus: bus, HealthInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := m.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
	users, err := auth.NewUsers(store, auth.UsersOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := users.EnsureAdmin("bench"); err != nil {
		tb.Fatal(err)
	}
	admin, err := users.Get(auth.AdminName)
	if err != nil {
		tb.Fatal(err)
	}
	tokens, err := auth.NewTokens(store, time.Now)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := server.New(server.Options{Users: users, Tokens: tokens, Clusters: m, Bus: bus})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	hs := httptest.NewServer(s.Handler())
	token, err := tokens.Issue("admin", admin.TokenStamp)
	if err != nil {
		tb.Fatal(err)
	}
	return &stack{srv: hs, bus: bus, m: m, token: token, stop: func() {
		hs.Close()
		s.Close()
		cancel()
		<-done
		bus.Close()
	}}
}

// waitRunning waits until n clusters are in the ready list, checking after
// every lifecycle event (each cluster that connects publishes one).
func (s *stack) waitRunning(tb testing.TB, n int) {
	tb.Helper()
	clustermanager.AwaitBus(tb, s.bus, 2*time.Minute, fmt.Sprintf("%d clusters ready", n), func() bool {
		return len(s.m.List(true)) >= n
	})
}

func (s *stack) get(tb testing.TB, path string) int {
	req, _ := http.NewRequest(http.MethodGet, s.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	return int(n)
}

// BenchmarkListClusters1000 measures GET /clusters over real loopback HTTP
// with 1,000 stored clusters (target: p99 < 5 ms); one op is 200 requests.
func BenchmarkListClusters1000(b *testing.B) {
	kubeconfigs := make([]string, 10)
	for i := range kubeconfigs {
		kubeconfigs[i] = clustermanager.NewAPIServerKubeconfig(b)
	}
	store := storagetest.Open(b)
	clustermanager.StoreImported(b, store, 1000, func(i int) string { return kubeconfigs[i%len(kubeconfigs)] })
	st := startStack(b, store)
	defer st.stop()
	st.waitRunning(b, 1000)
	if n := st.get(b, "/apis/zcloud.cn/v1/clusters"); n < 1000*50 {
		b.Fatalf("collection of %d bytes is too small for 1,000 clusters", n)
	}
	// Each iteration is a burst of requests, so that even -benchtime 3x
	// gives enough samples for a p99.
	const burst = 200
	lat := make([]time.Duration, 0, b.N*burst)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < burst; j++ {
			start := time.Now()
			st.get(b, "/apis/zcloud.cn/v1/clusters")
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkReload10000 measures a start-up with 10,000 stored clusters:
// open the database, load every row, wire the server and answer the first
// GET /clusters listing all of them (target: < 1 s).
func BenchmarkReload10000(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	path := dir + "/bench.db"
	store, err := storage.OpenBolt(path, storage.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	clustermanager.StoreImported(b, store, n, unreachableKubeconfig)
	store.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		store, err := storage.OpenBolt(path, storage.BoltOptions{})
		if err != nil {
			b.Fatal(err)
		}
		st := startStack(b, store)
		size := st.get(b, "/apis/zcloud.cn/v1/clusters")
		elapsed := time.Since(start)
		b.StopTimer()
		if size < n*50 {
			b.Fatalf("first answer has %d bytes, too few for %d clusters", size, n)
		}
		b.ReportMetric(float64(elapsed.Milliseconds()), "ms-to-serving")
		st.stop()
		store.Close()
		b.StartTimer()
	}
}
