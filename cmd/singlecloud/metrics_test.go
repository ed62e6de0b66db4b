package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

func TestMetricsListenConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default: none", nil, nil, ""},
		{"flag", []string{"--metrics-listen", "127.0.0.1:9100"}, nil, "127.0.0.1:9100"},
		{"env", nil, map[string]string{"SINGLECLOUD_METRICS_LISTEN": "10.0.0.5:9100"}, "10.0.0.5:9100"},
		{"flag wins", []string{"--metrics-listen", ":9200"}, map[string]string{"SINGLECLOUD_METRICS_LISTEN": ":9100"}, ":9200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, func(k string) string { return tt.env[k] })
			if err != nil || c.MetricsListen != tt.want {
				t.Fatalf("MetricsListen = %q, %v; want %q", c.MetricsListen, err, tt.want)
			}
		})
	}
	c, _ := parseConfig([]string{"--help"}, func(string) string { return "" })
	if !strings.Contains(c.Usage, "-metrics-listen") || !strings.Contains(c.Usage, "SINGLECLOUD_METRICS_LISTEN") {
		t.Errorf("--help does not explain --metrics-listen:\n%s", c.Usage)
	}
}

// freeAddr returns a loopback address nothing listens on (a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// get fetches url with an optional token and returns status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	status, body, _ := getServed(t, url, token)
	return status, body
}

// The binary as wired by run: /metrics for the admin's token on --listen;
// with --metrics-listen, without a token there and 404 on --listen. The
// scrape shows the instrumented store and the requests.
func TestRunServesMetrics(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own listener %v", own), func(t *testing.T) {
			dir := t.TempDir()
			listen, metricsAddr := freeAddr(t), ""
			args := []string{"--listen", listen, "--db", filepath.Join(dir, "singlecloud.db"), "--admin-password", "metrics-test-pw", "--log-level", "error"}
			if own {
				metricsAddr = freeAddr(t)
				args = append(args, "--metrics-listen", metricsAddr)
			}
			cfg, err := parseConfig(args, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, cfg, io.Discard) }()
			t.Cleanup(func() {
				cancel()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("run: %v", err)
					}
				case <-time.After(20 * time.Second):
					t.Error("run did not stop")
				}
			})
			base := "http://" + listen
			deadline := time.Now().Add(20 * time.Second)
			for {
				if c, err := net.Dial("tcp", listen); err == nil {
					c.Close()
					if status, _ := get(t, base+"/readyz", ""); status == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("the server never became ready")
				}
				time.Sleep(20 * time.Millisecond)
			}
			req, _ := http.NewRequest(http.MethodPost, base+"/apis/zcloud.cn/v1/users/admin?action=login",
				strings.NewReader(`{"password":"`+auth.PasswordDigest("metrics-test-pw")+`"}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var login struct{ Token string }
			err = json.NewDecoder(resp.Body).Decode(&login)
			resp.Body.Close()
			if err != nil || login.Token == "" {
				t.Fatalf("login: %d %v", resp.StatusCode, err)
			}

			var status int
			var body string
			if own {
				if status, _ = get(t, base+"/metrics", login.Token); status != http.StatusNotFound {
					t.Fatalf("--listen answers /metrics with %d, want 404", status)
				}
				status, body = get(t, "http://"+metricsAddr+"/metrics", "")
				if s, _ := get(t, "http://"+metricsAddr+"/apis/zcloud.cn/v1/clusters", ""); s != http.StatusNotFound {
					t.Fatalf("the metrics listener answers the API with %d, want 404", s)
				}
			} else {
				if status, _ = get(t, base+"/metrics", ""); status != http.StatusUnauthorized {
					t.Fatalf("/metrics without a token: %d, want 401", status)
				}
				status, body = get(t, base+"/metrics", login.Token)
			}
			if status != http.StatusOK {
				t.Fatalf("scrape: %d %s", status, body)
			}
			for _, want := range []string{
				`singlecloud_store_transaction_duration_seconds_count{operation="update"}`,
				`singlecloud_http_requests_total{code="2xx",method="POST",route="/apis/zcloud.cn/v1/users/{user}"} 1`,
				"process_resident_memory_bytes",
				`singlecloud_clusters{status="Running"} 0`,
				`singlecloud_clusters{status="Creating"} 0`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("scrape lacks %s", want)
				}
			}
		})
	}
}
