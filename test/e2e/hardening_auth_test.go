package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	bolt "go.etcd.io/bbolt"
)

// TestStolenDatabaseCannotForgeToken: an attacker with a copy of the
// database file (not its key file) tries every value in it as the token
// signing secret and as the token stamp; no token made so is accepted.
func TestStolenDatabaseCannotForgeToken(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	inst.stop(syscall.SIGTERM)

	stolen := filepath.Join(t.TempDir(), "stolen.db")
	raw, err := os.ReadFile(filepath.Join(inst.dir, "singlecloud.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stolen, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	values := valuesOf(t, stolen, "settings", "users")
	if len(values) < 3 {
		t.Fatalf("read only %d values from the stolen copy", len(values))
	}

	inst.start()
	if status, _ := admin.do(http.MethodGet, apiPath+"/clusters", nil); status != http.StatusOK {
		t.Fatalf("the admin's real token after restart: %d", status)
	}
	now := time.Now()
	stamps := append([][]byte{nil}, values...)
	tried := 0
	for _, key := range values {
		for _, stamp := range stamps {
			claims := jwt.MapClaims{"iss": "singlecloud", "sub": "admin", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
			if stamp != nil {
				claims["stamp"] = string(stamp)
			}
			token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			forged := &client{t: t, base: inst.URL, token: token}
			status, body := forged.do(http.MethodGet, apiPath+"/clusters", nil)
			expectError(t, "token forged from the stolen file", status, body, http.StatusUnauthorized, "Unauthorized")
			tried++
		}
	}
	t.Logf("%d forged tokens refused", tried)
}

// valuesOf returns every value of the named buckets of the bbolt file at
// path, and every string field of those that are JSON objects.
func valuesOf(t *testing.T, path string, buckets ...string) [][]byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out [][]byte
	err = db.View(func(tx *bolt.Tx) error {
		for _, name := range buckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				continue
			}
			err := b.ForEach(func(_, v []byte) error {
				out = append(out, bytes.Clone(v))
				var fields map[string]any
				if json.Unmarshal(v, &fields) == nil {
					for _, f := range fields {
						if s, ok := f.(string); ok && s != "" {
							out = append(out, []byte(s))
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDatabaseOpenToOthersRefused: a database file others may read stops
// the start with the command that fixes it.
func TestDatabaseOpenToOthersRefused(t *testing.T) {
	inst := startInstance(t, "")
	inst.stop(syscall.SIGTERM)
	db := filepath.Join(inst.dir, "singlecloud.db")
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--listen", freePort(t), "--db", db).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chmod 600 "+db) {
		t.Fatalf("start on a 0644 database: %v\n%s\nwant a refusal saying chmod 600 %s", err, out, db)
	}
	if err := os.Chmod(db, 0o600); err != nil {
		t.Fatal(err)
	}
	inst.start()
	inst.admin(t)
}

// TestAdminPasswordFileFollowsThePassword: --admin-password rewrites the
// file (README's login recipe keeps working); a reset through the API,
// which carries only a digest, removes the stale file and says so.
func TestAdminPasswordFileFollowsThePassword(t *testing.T) {
	inst := startInstance(t, "")
	path := filepath.Join(inst.dir, "singlecloud.admin-password")
	inst.stop(syscall.SIGTERM)
	inst.args = []string{"--admin-password", "from-the-flag"}
	inst.password = "from-the-flag"
	inst.start()
	if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != "from-the-flag" {
		t.Fatalf("password file after --admin-password: %q, %v", b, err)
	}
	if strings.Contains(inst.logText(), "from-the-flag") {
		t.Error("the flag's password is in the log")
	}
	admin := inst.admin(t)
	status, body := admin.do(http.MethodPost, apiPath+"/users/admin?action=resetPassword",
		map[string]string{"oldPassword": digest("from-the-flag"), "newPassword": digest("changed")})
	if status != http.StatusOK {
		t.Fatalf("reset admin password: %d %v", status, body)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("stale password file still there after the reset (err %v)", err)
	}
	// The log reaches us through a pipe, maybe after the answer.
	eventually(t, 5*time.Second, "the log says the stale password file was removed", func() (bool, string) {
		return strings.Contains(inst.logText(), "admin password file no longer holds it and was removed"), ""
	})
	inst.login(t, "admin", "changed")
}

// TestLoginFloodKeepsAPIResponsive: wrong-password floods are answered 429
// with Retry-After; a flood of right-password logins (each a full bcrypt
// check) leaves other calls fast.
func TestLoginFloodKeepsAPIResponsive(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	anon := inst.anonymous(t)
	var throttled *http.Response
	for range 20 {
		req, _ := http.NewRequest(http.MethodPost, inst.URL+apiPath+"/users/admin?action=login",
			strings.NewReader(`{"password":"`+digest("wrong")+`"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled = resp
			break
		}
	}
	if throttled == nil || throttled.Header.Get("Retry-After") == "" {
		t.Fatalf("20 wrong passwords from one address were never answered 429 with Retry-After")
	}
	status, body := anon.do(http.MethodPost, apiPath+"/users/admin?action=login", map[string]string{"password": digest(inst.password)})
	expectError(t, "login from a throttled address", status, body, http.StatusTooManyRequests, "TooManyRequests")

	// The right password from another user, 16 loops at once.
	status, body = admin.do(http.MethodPost, apiPath+"/users", map[string]any{"name": "flood", "password": digest("flood-pw"), "projects": []any{}})
	if status != http.StatusCreated {
		t.Fatalf("create user: %d %v", status, body)
	}
	median := func(n int) time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			start := time.Now()
			if status, _ := admin.do(http.MethodGet, apiPath+"/clusters", nil); status != http.StatusOK {
				t.Fatalf("GET /clusters: %d", status)
			}
			ds[i] = time.Since(start)
		}
		slices.Sort(ds)
		return ds[n/2]
	}
	before := median(20)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var logins atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, inst.URL+apiPath+"/users/flood?action=login",
					strings.NewReader(`{"user":"flood","password":"`+digest("flood-pw")+`"}`))
				if err != nil {
					return
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					logins.Add(1)
				}
			}
		}()
	}
	eventually(t, 20*time.Second, "the flood's logins run", func() (bool, string) {
		return logins.Load() >= 2, ""
	})
	during := median(40)
	stop()
	wg.Wait()
	t.Logf("GET /clusters median %s before, %s during the flood (%d logins)", before, during, logins.Load())
	if limit := max(20*before, 50*time.Millisecond); during > limit {
		t.Fatalf("GET /clusters median during the login flood is %s, over %s (20x its %s before)", during, limit, before)
	}
}
