package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// loginAs logs in as admin with password and returns the answer.
func loginAs(t *testing.T, base, password string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/apis/zcloud.cn/v1/users/admin?action=login",
		strings.NewReader(`{"password":"`+auth.PasswordDigest(password)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, resp.Header, body
}

// TestRestartWithANewAdminPasswordNeverAcceptsTheOld restarts the binary's
// run on its bbolt file with a new --admin-password, holds its start-up
// before the password is applied, and logs in with the old password
// throughout: while starting, the port answers 503 NoLeader "starting up"
// (the probes answer: alive, not ready); once started, 401. Never 200.
func TestRestartWithANewAdminPasswordNeverAcceptsTheOld(t *testing.T) {
	listen, db := freeAddr(t), filepath.Join(t.TempDir(), "singlecloud.db")
	cfgWith := func(pw string) config {
		cfg, err := parseConfig([]string{"--listen", listen, "--db", db, "--admin-password", pw, "--log-level", "error"},
			func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	first := startRun(t, cfgWith("old-pw"), listen)
	if status, _, body := loginAs(t, first.base, "old-pw"); status != http.StatusOK {
		t.Fatalf("login before the restart: %d %v", status, body)
	}
	first.stop(t)

	reached, release := make(chan struct{}), make(chan struct{})
	hooks := runHooks{starting: func(ctx context.Context) {
		close(reached)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	second := &etcdServer{base: "http://" + listen, cancel: cancel, done: make(chan error, 1)}
	go func() { second.done <- runWith(ctx, cfgWith("new-pw"), io.Discard, hooks) }()
	defer second.stop(t) // its ctx ends the hook too
	select {
	case <-reached:
	case err := <-second.done:
		t.Fatalf("run stopped at start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("start-up never reached its hook")
	}

	base, released := second.base, false
	if status, _ := get(t, base+"/healthz", ""); status != http.StatusOK {
		t.Fatalf("healthz while starting: %d", status)
	}
	if status, body := get(t, base+"/readyz", ""); status != http.StatusServiceUnavailable || !strings.Contains(body, "starting") {
		t.Fatalf("readyz while starting: %d %s", status, body)
	}
	// Three refusals while held, then start-up goes on; the old password
	// is tried until the started server answers it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for refused := 0; ; {
		status, hdr, body := loginAs(t, base, "old-pw")
		if status == http.StatusUnauthorized {
			break
		}
		if status != http.StatusServiceUnavailable || body["code"] != server.CodeNoLeader || hdr.Get("Retry-After") == "" ||
			!strings.Contains(str(body["message"]), "starting up: retry in a few seconds") {
			t.Fatalf("the old password during the restart: %d %v (Retry-After %q); want 503 starting up, then 401",
				status, body, hdr.Get("Retry-After"))
		}
		if refused++; refused == 3 {
			close(release)
			released = true
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the restarted server never answered the old password")
		}
	}
	if !released {
		t.Fatal("the old password was answered while start-up was held")
	}
	if status, _, body := loginAs(t, base, "new-pw"); status != http.StatusOK {
		t.Fatalf("the new password: %d %v", status, body)
	}
	if status, body := get(t, base+"/readyz", ""); status != http.StatusOK {
		t.Fatalf("readyz once started: %d %s", status, body)
	}
}

func str(v any) string { s, _ := v.(string); return s }
