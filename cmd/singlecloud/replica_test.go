package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
)

// leads reads from base's /readyz whether it leads and whether it is
// ready (/readyz names the leader to the admin only).
func leads(t *testing.T, base string) (leading, ready bool) {
	t.Helper()
	status, body := get(t, base+"/readyz", "")
	var v struct{ Leading bool }
	if err := json.Unmarshal([]byte(body), &v); err != nil || (status != http.StatusOK && status != http.StatusServiceUnavailable) {
		t.Fatalf("readyz of %s: %d %s", base, status, body)
	}
	return v.Leading, status == http.StatusOK
}

// replicasOf reads the leader and the answering replica from base's
// /version, with token.
func replicasOf(t *testing.T, base, token string) (leader, replica string) {
	t.Helper()
	status, body := get(t, base+"/apis/zcloud.cn/v1/version", token)
	var v struct{ Leader, Replica string }
	if err := json.Unmarshal([]byte(body), &v); err != nil || status != http.StatusOK {
		t.Fatalf("version of %s: %d %s", base, status, body)
	}
	return v.Leader, v.Replica
}

// waitLeader waits until leader says it leads and base is ready.
func waitLeader(t *testing.T, base, leader string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		leading, _ := leads(t, leader)
		_, ready := leads(t, base)
		if leading && ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %s leads %v, %s ready %v", leader, leading, base, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Two replicas on one prefix: the first leads, the second follows and
// forwards the API to it (logins, writes, reads); the first stopped, the
// second leads with the state the first wrote. A replica does not start
// while a restore holds the prefix's lock, nor a restore while a replica
// runs.
func TestRunOnEtcdReplicas(t *testing.T) {
	endpoint := etcdtest.Shared(t).Endpoint
	prefix := etcdtest.UniquePrefix(t)
	keyFile := filepath.Join(t.TempDir(), "singlecloud.key")

	first := startEtcdRun(t, endpoint, prefix, keyFile)
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatalf("the key file was not created: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(keyFile), adminPasswordFile)); err != nil {
		t.Fatalf("the admin password file is not beside the key file: %v", err)
	}
	second := startEtcdRun(t, endpoint, prefix, keyFile)
	// Without a token /readyz says who leads, but names no address.
	if status, body := get(t, second.base+"/readyz", ""); status != http.StatusOK || !strings.Contains(body, `"leading":false`) ||
		strings.Contains(body, first.base) {
		t.Fatalf("the follower's /readyz: %d %s; want 200, not leading, no address", status, body)
	}
	if leading, ready := leads(t, first.base); !leading || !ready {
		t.Fatalf("the first replica's /readyz: leading %v, ready %v", leading, ready)
	}
	token := second.login(t) // forwarded
	if status, body := get(t, second.base+"/readyz", token); status != http.StatusOK || !strings.Contains(body, first.base) {
		t.Fatalf("the follower's /readyz to the admin: %d %s; want 200 naming the leader", status, body)
	}
	if l, r := replicasOf(t, second.base, token); l != first.base || r != second.base {
		t.Fatalf("the follower says leader %q, replica %q to the admin; want %q, %q", l, r, first.base, second.base)
	}
	if l, r := replicasOf(t, second.base, ""); l != "" || r != "" {
		t.Fatalf("the follower names leader %q, replica %q without a token", l, r)
	}
	if status, body := do(t, http.MethodPost, second.base+"/apis/zcloud.cn/v1/users", token,
		`{"name":"alice","password":"`+auth.PasswordDigest("alice-pw")+`"}`); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create a user through the follower: %d %s", status, body)
	}
	if status, body := get(t, first.base+"/apis/zcloud.cn/v1/users/alice", token); status != http.StatusOK {
		t.Fatalf("the user written through the follower, read on the leader: %d %s", status, body)
	}

	// A restore refuses the prefix while replicas run.
	db := etcdtest.Open(t, storage.EtcdOptions{Prefix: prefix, KeyFile: keyFile})
	if _, _, err := lockPrefix(context.Background(), db.Client(), db.Prefix()); err == nil ||
		!strings.Contains(err.Error(), "another singlecloud runs on "+prefix) {
		t.Fatalf("lock the prefix while replicas run: %v; want refused", err)
	}

	stopped := time.Now()
	first.stop(t)
	// The first resigned as it stopped: the second is elected without
	// waiting for the first's lease to expire (its load, bcrypt of the
	// admin password included, comes after and is not timed here).
	for {
		if leading, _ := leads(t, second.base); leading {
			break
		}
		if time.Since(stopped) > defaultLeaderTTL {
			t.Fatalf("the follower was not elected within the lease of %s after the leader stopped cleanly", defaultLeaderTTL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("elected %s after the leader stopped cleanly", time.Since(stopped).Round(time.Millisecond))
	waitLeader(t, second.base, second.base)
	if status, body := get(t, second.base+"/apis/zcloud.cn/v1/users/alice", token); status != http.StatusOK {
		t.Fatalf("the user on the new leader: %d %s", status, body)
	}
	second.stop(t)

	// A replica refuses the prefix while a restore holds its lock.
	unlock, _, err := lockPrefix(context.Background(), db.Client(), db.Prefix())
	if err != nil {
		t.Fatalf("lock the prefix once every replica stopped: %v", err)
	}
	defer unlock()
	cfg, err := parseConfig([]string{"--listen", freeAddr(t), "--store", "etcd", "--etcd-endpoints", endpoint,
		"--etcd-prefix", prefix, "--etcd-key-file", keyFile, "--log-level", "error"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "holds the prefix's lock") {
		t.Fatalf("a replica while a restore holds the lock: %v; want refused", err)
	}
}

// A leader whose lease is lost (here: revoked, as when it expires while
// etcd is unreachable or the process is paused) stops its workers and
// returns an error, so that it never runs beside the next leader; the
// follower takes over.
func TestRunOnEtcdStepsDownWhenLeadershipLost(t *testing.T) {
	for name, lose := range map[string]func(ctx context.Context, c *clientv3.Client, kv *mvccpb.KeyValue) error{
		// As when the lease expires (etcd unreachable, the process paused).
		"lease revoked": func(ctx context.Context, c *clientv3.Client, kv *mvccpb.KeyValue) error {
			_, err := c.Revoke(ctx, clientv3.LeaseID(kv.Lease))
			return err
		},
		// The session lives on, but the follower's campaign now leads.
		"campaign key deleted": func(ctx context.Context, c *clientv3.Client, kv *mvccpb.KeyValue) error {
			_, err := c.Delete(ctx, string(kv.Key))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			endpoint := etcdtest.Shared(t).Endpoint
			prefix := etcdtest.UniquePrefix(t)
			keyFile := filepath.Join(t.TempDir(), "singlecloud.key")
			leader := startEtcdRun(t, endpoint, prefix, keyFile)
			follower := startEtcdRun(t, endpoint, prefix, keyFile)

			client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := client.Get(ctx, prefix+".election/", clientv3.WithFirstCreate()...)
			if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 || string(resp.Kvs[0].Value) != leader.base {
				t.Fatalf("the leader's campaign key: %+v, %v; want one on a lease, valued %s", resp, err, leader.base)
			}
			if err := lose(ctx, client, resp.Kvs[0]); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-leader.done:
				leader.cancel()
				leader.cancel = nil
				if err == nil || !strings.Contains(err.Error(), "lost the leadership") {
					t.Fatalf("run after its leadership ended: %v; want the lost-leadership error", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the leader did not step down")
			}
			waitLeader(t, follower.base, follower.base)
		})
	}
}

// waitTLSReady waits until the https run s answers /readyz 200.
func waitTLSReady(t testing.TB, s *etcdServer, listen string) *etcdServer {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for {
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("run stopped at start: %v", err)
		default:
		}
		if resp, err := hc.Get(s.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became ready", listen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeSelfSigned writes a self-signed certificate for 127.0.0.1 and its
// key, and returns their paths and a pool trusting it.
func writeSelfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "singlecloud"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// Replicas serving https with one self-signed certificate: the follower
// forwards to the leader's https advertise URL, trusting the certificate
// it serves with itself.
func TestRunOnEtcdReplicasOverTLS(t *testing.T) {
	endpoint := etcdtest.Shared(t).Endpoint
	prefix := etcdtest.UniquePrefix(t)
	keyFile := filepath.Join(t.TempDir(), "singlecloud.key")
	cert, key, pool := writeSelfSigned(t)
	leader := startEtcdRun(t, endpoint, prefix, keyFile, "--tls-cert", cert, "--tls-key", key)
	follower := startEtcdRun(t, endpoint, prefix, keyFile, "--tls-cert", cert, "--tls-key", key)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Post(follower.base+"/apis/zcloud.cn/v1/users/admin?action=login", "application/json",
		strings.NewReader(`{"password":"`+auth.PasswordDigest("etcd-test-pw")+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var login struct{ Token string }
	if err := json.Unmarshal(body, &login); resp.StatusCode != http.StatusOK || err != nil || login.Token == "" {
		t.Fatalf("login through the https follower: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, follower.base+"/readyz", nil)
	req.Header.Set("Authorization", "Bearer "+login.Token)
	if resp, err = hc.Do(req); err != nil {
		t.Fatal(err)
	}
	var v struct{ Leader string }
	_ = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if v.Leader != leader.base || !strings.HasPrefix(v.Leader, "https://") {
		t.Fatalf("the follower names leader %q to the admin, want %s", v.Leader, leader.base)
	}
}

func TestIsLoopbackURL(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:8080": true, "https://[::1]:8443": true, "http://localhost:80": true,
		"http://10.0.0.5:8080": false, "https://sc1.example:8443": false, "": false,
	} {
		if got := isLoopbackURL(u); got != want {
			t.Errorf("isLoopbackURL(%q) = %v, want %v", u, got, want)
		}
	}
}
