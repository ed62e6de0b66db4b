package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// seedEtcdClusters imports n clusters into the prefix with the cluster
// manager's own code, each pointing at an HTTPS server that is no
// Kubernetes API (Unavailable, never retried), and waits until all are.
func seedEtcdClusters(b *testing.B, prefix, keyFile string, n int) {
	b.Helper()
	db := etcdtest.Open(b, storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile})
	stub := httptest.NewTLSServer(http.NotFoundHandler())
	defer stub.Close()
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: bench}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, stub.URL)
	bus := pubsub.New(pubsub.Options{})
	defer bus.Close()
	mgr, err := clustermanager.New(clustermanager.Options{Store: db, Sealer: db.Sealer(), Bus: bus, HealthInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	defer func() { cancel(); <-done }()
	names := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if _, err := mgr.Import(ctx, model.ImportRequest{Name: name, Kubeconfig: kubeconfig}); err != nil {
					b.Errorf("import %s: %v", name, err)
				}
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("c%05d", i)
	}
	close(names)
	wg.Wait()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		settled := 0
		for _, c := range mgr.List(false) {
			if c.Status == fsm.StateUnavailable {
				settled++
			}
		}
		if settled == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters Unavailable after 5 minutes", settled, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkListThroughFollower1000: GET /clusters (the whole list of 1,000
// stored clusters, about 900 KB) answered by the leader, and by a follower
// from its own copy of the store (after the linearizing read of etcd's
// revision each read pays), two replicas of one etcd prefix in this
// process over loopback HTTP. It reports p50 and p99 of each.
func BenchmarkListThroughFollower1000(b *testing.B) {
	endpoint := etcdtest.Shared(b).Endpoint
	prefix := etcdtest.UniquePrefix(b)
	keyFile := filepath.Join(b.TempDir(), "singlecloud.key")
	seedEtcdClusters(b, prefix, keyFile, 1000)
	leader := startEtcdRun(b, endpoint, prefix, keyFile)
	follower := startEtcdRun(b, endpoint, prefix, keyFile)
	token := loginAdmin(b, leader.base)
	hc := &http.Client{Timeout: 10 * time.Second}
	list := func(base string, local bool) time.Duration {
		req, _ := http.NewRequest(http.MethodGet, base+"/apis/zcloud.cn/v1/clusters", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n < 100_000 {
			b.Fatalf("list through %s: %d, %d bytes", base, resp.StatusCode, n)
		}
		if served := resp.Header.Get(server.ServedByHeader); (served == base) != local {
			b.Fatalf("list through %s answered by %q", base, served)
		}
		return time.Since(start)
	}
	for _, via := range []struct {
		name, base string
		local      bool
	}{{"leader", leader.base, false}, {"follower", follower.base, true}} {
		b.Run(via.name, func(b *testing.B) {
			list(via.base, via.local) // warm the connection and the cached list
			var took []time.Duration
			for range b.N {
				for range 100 {
					took = append(took, list(via.base, via.local))
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// loginAdmin logs the admin of startEtcdRun in at base and returns the
// token.
func loginAdmin(b *testing.B, base string) string {
	b.Helper()
	resp, err := http.Post(base+"/apis/zcloud.cn/v1/users/admin?action=login", "application/json",
		strings.NewReader(`{"password":"`+auth.PasswordDigest("etcd-test-pw")+`"}`))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var login struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&login); err != nil || login.Token == "" {
		b.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return login.Token
}
