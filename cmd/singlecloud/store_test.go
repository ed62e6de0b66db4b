package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// TestMain stops the etcd the tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}

func TestStoreConfig(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "seal.key")
	etcdArgs := []string{"--store", "etcd", "--etcd-endpoints", "http://a:2379, http://b:2379,", "--etcd-key-file", keyFile}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(c config) bool
		wantErr string
	}{
		{name: "default: bolt", want: func(c config) bool {
			return c.Store == storeBolt && filepath.Base(c.DB) == "singlecloud.db" && filepath.Base(filepath.Dir(c.DB)) == "singlecloud-data" && c.Etcd.Prefix == defaultEtcdPrefix && c.Etcd.Endpoints == nil
		}},
		{name: "etcd flags", args: append(etcdArgs, "--etcd-prefix", "/prod", "--etcd-cert", "c.pem", "--etcd-key", "k.pem", "--etcd-ca", "ca.pem"),
			want: func(c config) bool {
				return c.Store == storeEtcd && reflect.DeepEqual(c.Etcd, etcdConfig{
					Endpoints: []string{"http://a:2379", "http://b:2379"}, CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem",
					Prefix: "/prod/", SealKeyFile: keyFile, LeaderTTL: defaultLeaderTTL,
				}) && c.SnapshotDir == filepath.Join(filepath.Dir(keyFile), "snapshots") &&
					adminPasswordPath(c) == filepath.Join(filepath.Dir(keyFile), "seal.admin-password") &&
					c.ImageDir == filepath.Join(filepath.Dir(keyFile), "images")
			}},
		{name: "etcd env", env: map[string]string{
			"SINGLECLOUD_STORE": "etcd", "SINGLECLOUD_ETCD_ENDPOINTS": "https://e:2379", "SINGLECLOUD_ETCD_KEY_FILE": keyFile,
			"SINGLECLOUD_ETCD_PREFIX": "/x/", "SINGLECLOUD_ETCD_CERT": "c", "SINGLECLOUD_ETCD_KEY": "k", "SINGLECLOUD_ETCD_CA": "ca",
		}, want: func(c config) bool {
			return c.Store == storeEtcd && reflect.DeepEqual(c.Etcd, etcdConfig{
				Endpoints: []string{"https://e:2379"}, CertFile: "c", KeyFile: "k", CAFile: "ca", Prefix: "/x/", SealKeyFile: keyFile, LeaderTTL: defaultLeaderTTL,
			})
		}},
		{name: "flag wins over env", args: []string{"--store", "bolt"}, env: map[string]string{"SINGLECLOUD_STORE": "etcd"},
			want: func(c config) bool { return c.Store == storeBolt }},
		{name: "default prefix", args: etcdArgs, want: func(c config) bool { return c.Etcd.Prefix == "/singlecloud/" }},
		{name: "bad store", args: []string{"--store", "mysql"}, wantErr: `store: "mysql" is not bolt or etcd`},
		{name: "no endpoints", args: []string{"--store", "etcd", "--etcd-key-file", keyFile}, wantErr: "etcd-endpoints: required with --store etcd"},
		{name: "blank endpoints", args: []string{"--store", "etcd", "--etcd-endpoints", " , ", "--etcd-key-file", keyFile}, wantErr: "etcd-endpoints: required"},
		{name: "no key file", args: []string{"--store", "etcd", "--etcd-endpoints", "http://a:2379"}, wantErr: "etcd-key-file: required with --store etcd"},
		{name: "endpoint with another scheme", args: []string{"--store", "etcd", "--etcd-endpoints", "etcd://a:2379", "--etcd-key-file", keyFile}, wantErr: `etcd-endpoints: "etcd://a:2379": the scheme must be http or https`},
		{name: "endpoint with a path", args: []string{"--store", "etcd", "--etcd-endpoints", "http://a:2379/sc/", "--etcd-key-file", keyFile}, wantErr: "only a scheme, a host and a port"},
		{name: "endpoint without a port", args: []string{"--store", "etcd", "--etcd-endpoints", "//a/sc/", "--etcd-key-file", keyFile}, wantErr: "neither a URL nor host:port"},
		{name: "cert without key", args: append(etcdArgs, "--etcd-cert", "c.pem"), wantErr: "etcd-cert and etcd-key must be given together"},
		{name: "empty prefix", args: append(etcdArgs, "--etcd-prefix", ""), wantErr: "etcd-prefix:"},
		{name: "etcd flag with bolt", args: []string{"--etcd-endpoints", "http://a:2379"}, wantErr: "etcd-endpoints: given with --store bolt"},
		{name: "etcd env with bolt", env: map[string]string{"SINGLECLOUD_ETCD_KEY_FILE": keyFile}, wantErr: "etcd-key-file: given with --store bolt"},
		{name: "prefix with bolt", args: []string{"--etcd-prefix", "/p/"}, wantErr: "etcd-prefix: given with --store bolt"},
		{name: "advertise derived from listen", args: append(etcdArgs, "--listen", "10.0.0.5:8080"),
			want: func(c config) bool {
				return c.Etcd.AdvertiseURL == "http://10.0.0.5:8080" && c.Etcd.LeaderTTL == defaultLeaderTTL
			}},
		{name: "advertise not derived from a wildcard", args: append(etcdArgs, "--listen", "0.0.0.0:8080"),
			want: func(c config) bool { return c.Etcd.AdvertiseURL == "" }},
		{name: "advertise given, https", args: append(etcdArgs, "--advertise-url", "https://sc1.example:8443/", "--leader-ttl", "7s"),
			want: func(c config) bool {
				return c.Etcd.AdvertiseURL == "https://sc1.example:8443" && c.Etcd.LeaderTTL == 7*time.Second
			}},
		{name: "bad advertise", args: append(etcdArgs, "--advertise-url", "sc1:8080"), wantErr: "advertise-url: \"sc1:8080\" is not a URL"},
		{name: "short leader ttl", args: append(etcdArgs, "--leader-ttl", "1s"), wantErr: "leader-ttl: \"1s\" is not a whole number"},
		{name: "fractional leader ttl", args: append(etcdArgs, "--leader-ttl", "2500ms"), wantErr: "leader-ttl:"},
		{name: "advertise with bolt", args: []string{"--advertise-url", "http://a:1"}, wantErr: "advertise-url: given with --store bolt"},
		{name: "leader ttl with bolt", args: []string{"--leader-ttl", "9s"}, wantErr: "leader-ttl: given with --store bolt"},
		{name: "etcd ignores an empty db", args: append(etcdArgs, "--db", ""), want: func(c config) bool { return c.Store == storeEtcd }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.want(c) {
				t.Fatalf("parseConfig = %+v, %v", c, err)
			}
		})
	}
	c, _ := parseConfig([]string{"--help"}, func(string) string { return "" })
	for _, want := range []string{"-store", "SINGLECLOUD_STORE", "-etcd-endpoints", "SINGLECLOUD_ETCD_ENDPOINTS", "-etcd-cert",
		"SINGLECLOUD_ETCD_CERT", "-etcd-key ", "SINGLECLOUD_ETCD_KEY)", "-etcd-ca", "SINGLECLOUD_ETCD_CA", "-etcd-prefix",
		"SINGLECLOUD_ETCD_PREFIX", "-etcd-key-file", "SINGLECLOUD_ETCD_KEY_FILE", "ignored with --store etcd",
		"several singlecloud replicas may run on one\n--etcd-prefix", "-advertise-url", "SINGLECLOUD_ADVERTISE_URL",
		"-leader-ttl", "SINGLECLOUD_LEADER_TTL"} {
		if !strings.Contains(c.Usage, want) {
			t.Errorf("--help lacks %q:\n%s", want, c.Usage)
		}
	}
}

// etcdServer is one run() of the server over --store etcd.
type etcdServer struct {
	base   string
	cancel context.CancelFunc
	done   chan error
}

// startEtcdRun starts run() on endpoint and prefix and waits for /readyz.
func startEtcdRun(t testing.TB, endpoint, prefix, keyFile string, extra ...string) *etcdServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	cfg, err := parseConfig(append([]string{"--listen", listen, "--store", "etcd", "--etcd-endpoints", endpoint,
		"--etcd-prefix", prefix, "--etcd-key-file", keyFile, "--admin-password", "etcd-test-pw", "--log-level", "error"},
		extra...), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return startRun(t, cfg, listen)
}

// startRun runs run() with cfg, listening on listen, stops it at the end
// of the test, and waits (bounded) until it answers /readyz.
func startRun(t testing.TB, cfg config, listen string) *etcdServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &etcdServer{base: "http://" + listen, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- run(ctx, cfg, io.Discard) }()
	t.Cleanup(func() { s.stop(t) })
	if cfg.TLSCert != "" {
		// Only the run's readiness is polled here, over TLS; a test of
		// TLS brings its own client.
		s.base = "https://" + listen
		return waitTLSReady(t, s, listen)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("run stopped at start: %v", err)
		default:
		}
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			if resp, err := http.Get(s.base + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never became ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the run and checks it ended without an error; again is a no-op.
func (s *etcdServer) stop(t testing.TB) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("run did not stop")
	}
}

// do sends a request with a JSON body and returns its status and body.
func do(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *etcdServer) login(t *testing.T) string {
	t.Helper()
	status, body := do(t, http.MethodPost, s.base+"/apis/zcloud.cn/v1/users/admin?action=login", "",
		`{"password":"`+auth.PasswordDigest("etcd-test-pw")+`"}`)
	var login struct{ Token string }
	if err := json.Unmarshal([]byte(body), &login); err != nil || status != http.StatusOK || login.Token == "" {
		t.Fatalf("login: %d %s", status, body)
	}
	return login.Token
}
