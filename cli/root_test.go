package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCLI runs args with a config in dir and returns the exit code and
// outputs.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"SINGLECLOUD_CONFIG": filepath.Join(dir, "config.yaml")}
	code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
	return code, out.String(), errb.String()
}

// fakeAPI answers every request with status and body, the way the
// server's envelope looks (server/errors.go).
func fakeAPI(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"Unauthorized","status":401,"type":"error","message":"the token is not valid"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func loggedIn(t *testing.T, server string) string {
	t.Helper()
	dir := t.TempDir()
	c := &Config{CurrentContext: "x", Contexts: []Context{{Name: "x", Server: server, User: "admin", Token: "tok"}}}
	if err := c.save(filepath.Join(dir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestExitCodesAndErrors(t *testing.T) {
	validation := `{"code":"InvalidOption","status":422,"type":"error","message":"sshKey: is required: paste the private key; nodes[0].address: \"x\" is not an IP address; give the node's IP, like 10.0.0.11; nodes: at least one etcd node is required"}`
	// The same with the field list of newer servers; a reason holding ": "
	// and "; " stays whole.
	withFields := `{"code":"InvalidOption","status":422,"type":"error","message":"(as above)","fields":[` +
		`{"field":"sshKey","reason":"is required: paste the private key"},` +
		`{"field":"nodes[0].address","reason":"\"x\" is not an IP address; give the node's IP, like 10.0.0.11"},` +
		`{"field":"","reason":"…and 3 more"}]}`
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		args       []string
		loggedIn   bool
		wantCode   int
		wantStderr []string
	}{
		{"usage: missing argument", 200, "{}", []string{"cluster", "get"}, true, ExitUsage, []string{"needs NAME", "'singlecloud cluster get --help'"}},
		{"usage: unknown flag", 200, "{}", []string{"cluster", "list", "--bogus"}, true, ExitUsage, []string{"unknown flag: --bogus"}},
		{"usage: unknown command", 200, "{}", []string{"clustr"}, true, ExitUsage, []string{`unknown command "clustr"`}},
		{"usage: unknown subcommand", 200, "{}", []string{"cluster", "bogus"}, true, ExitUsage, []string{`unknown command "bogus" for "singlecloud cluster"`, "'singlecloud cluster --help'"}},
		{"usage: unknown command, a suggestion", 200, "{}", []string{"clustre"}, true, ExitUsage, []string{`unknown command "clustre"`, "Did you mean this?"}},
		{"usage: an argument too many", 200, "{}", []string{"cluster", "get", "a", "b"}, true, ExitUsage, []string{"needs NAME"}},
		{"usage: a required flag", 200, "{}", []string{"cluster", "restore", "x"}, true, ExitUsage, []string{`required flag(s) "snapshot" not set`, "'singlecloud cluster restore --help'"}},
		{"usage: cobra's own validator", 200, "{}", []string{"completion", "bash", "extra"}, true, ExitUsage, []string{`unknown command "extra"`}},
		{"usage: flag needs an argument", 200, "{}", []string{"cluster", "list", "-o"}, true, ExitUsage, []string{"flag needs an argument"}},
		{"a group alone prints its help", 200, "{}", []string{"cluster"}, true, ExitOK, nil},
		{"usage: bad -o", 200, "{}", []string{"cluster", "list", "-o", "xml"}, true, ExitUsage, []string{`output "xml"`}},
		{"usage: bad --for", 200, "{}", []string{"cluster", "wait", "x", "--for", "ready"}, true, ExitUsage, []string{"status=STATUS"}},
		{"not logged in", 200, "{}", []string{"cluster", "list"}, false, ExitError, []string{"not logged in"}},
		{"not found", 404, `{"code":"NotFound","status":404,"type":"error","message":"cluster nope: cluster not found"}`, []string{"cluster", "get", "nope"}, true, ExitError, []string{"Error from server (NotFound): cluster nope: cluster not found"}},
		{"validation: a line per field", 422, validation, []string{"cluster", "delete", "x"}, true, ExitError, []string{
			"Error from server (InvalidOption):\n  sshKey: is required: paste the private key\n  nodes[0].address: \"x\" is not an IP address; give the node's IP, like 10.0.0.11\n  nodes: at least one etcd node is required\n"}},
		{"validation with the field list", 422, withFields, []string{"cluster", "delete", "x"}, true, ExitError, []string{
			"Error from server (InvalidOption):\n  sshKey: is required: paste the private key\n  nodes[0].address: \"x\" is not an IP address; give the node's IP, like 10.0.0.11\n  …and 3 more\n"}},
		{"permission denied has a hint", 403, `{"code":"PermissionDenied","status":403,"type":"error","message":"only admin can manage clusters"}`, []string{"cluster", "cancel", "x"}, true, ExitError, []string{"(PermissionDenied)", "hint: "}},
		{"not an envelope", 502, "<html>bad gateway</html>", []string{"cluster", "list"}, true, ExitError, []string{"(Bad Gateway): <html>bad gateway</html>"}},
		{"ok", 200, `{"type":"collection","data":[{"name":"a","status":"Running"}]}`, []string{"cluster", "list", "-o", "name"}, true, ExitOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.loggedIn {
				dir = loggedIn(t, fakeAPI(t, tc.status, tc.body))
			}
			code, out, stderr := runCLI(t, dir, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, tc.wantCode, out, stderr)
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if tc.wantCode != ExitOK && out != "" {
				t.Errorf("stdout on an error: %q", out)
			}
		})
	}
}

// TestReportClassifiesByType: the exit code is the error's type's, never
// its text's: an error reading like one of cobra's is still an error.
func TestReportClassifiesByType(t *testing.T) {
	api := &APIError{Status: 422, Code: "InvalidOption", Message: "accepts 1 arg(s), invalid argument"}
	for _, tc := range []struct {
		name     string
		err      error
		wantCode int
		want     string
	}{
		{"a rename's invalid argument", fmt.Errorf("write /mnt/vfat/a:b: %w", &os.LinkError{Op: "rename", Old: "/mnt/vfat/.a:b.tmp", New: "/mnt/vfat/a:b", Err: syscall.EINVAL}), ExitError, "error: write /mnt/vfat/a:b: rename"},
		{"text like cobra's", errors.New("unknown flag: accepts 2 arg(s); required flag"), ExitError, "error: unknown flag"},
		{"an API error reading like usage", fmt.Errorf("apply: %w", api), ExitError, "Error from server (InvalidOption): accepts 1 arg(s), invalid argument"},
		{"a usage error", fmt.Errorf("wrapped: %w", usageErrorf("needs NAME")), ExitUsage, "See 'singlecloud cluster get --help' for usage."},
		{"an exit error", &exitError{code: ExitError, msg: "timed out"}, ExitError, "error: timed out"},
		{"an exit error wrapping an API error", fmt.Errorf("x: %w", &exitError{code: ExitUsage, msg: "m"}), ExitUsage, "error: m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			root := New(Streams{Out: &b, Err: &b})
			if code := report(&b, root, []string{"cluster", "get"}, tc.err); code != tc.wantCode {
				t.Errorf("code %d, want %d", code, tc.wantCode)
			}
			if !strings.Contains(b.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", b.String(), tc.want)
			}
		})
	}
}

// TestInterruptedExitsOne: a command stopped by Ctrl-C exits 1 (the
// product's codes are 0, 1 and 2), silently.
func TestInterruptedExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") { // not the admin: poll
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"code":"PermissionDenied","status":403,"type":"error","message":"no"}`))
			return
		}
		<-r.Context().Done() // the cluster's read hangs until Ctrl-C
	}))
	defer srv.Close()
	dir := loggedIn(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	env := map[string]string{"SINGLECLOUD_CONFIG": filepath.Join(dir, "config.yaml")}
	code := Run(ctx, []string{"cluster", "wait", "lab"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }})
	if code != ExitError || errb.String() != "" {
		t.Errorf("exit %d, stderr %q; want 1 and nothing", code, errb.String())
	}
}

func TestLoginNeedsAPasswordSource(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, dir, "login", "--server", "http://127.0.0.1:1", "--user", "admin")
	if code != ExitUsage || !strings.Contains(stderr, "--password-file") {
		t.Errorf("login without a terminal or password: %d %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
		t.Error("a failed login wrote the config")
	}
}

func TestLoginSendsTheDigestAndKeepsTheToken(t *testing.T) {
	var gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(r.Body)
		gotBody = r.Method + " " + r.URL.RequestURI() + " " + b.String()
		_, _ = w.Write([]byte(`{"token":"the-token"}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, dir, "login", "--server", srv.URL, "--user", "ann", "--password-file", pw)
	if code != 0 {
		t.Fatalf("login: %d %s %s", code, out, stderr)
	}
	want := `POST /apis/zcloud.cn/v1/users/ann?action=login {"password":"` + digest("s3cret") + `"}`
	if gotBody != want {
		t.Errorf("sent %q, want %q", gotBody, want)
	}
	if strings.Contains(out+stderr, "the-token") || strings.Contains(out+stderr, "s3cret") {
		t.Errorf("a secret was printed: %q %q", out, stderr)
	}
	cfg, err := loadConfig(filepath.Join(dir, "config.yaml"))
	if err != nil || cfg.CurrentContext == "" || cfg.context(cfg.CurrentContext).Token != "the-token" || cfg.context(cfg.CurrentContext).User != "ann" {
		t.Errorf("config after login: %v %+v", err, cfg)
	}
	if code, out, _ := runCLI(t, dir, "logout"); code != 0 || !strings.Contains(out, "Logged out") {
		t.Errorf("logout: %d %q", code, out)
	}
	if cfg, _ := loadConfig(filepath.Join(dir, "config.yaml")); cfg.context(cfg.CurrentContext).Token != "" {
		t.Error("logout kept the token")
	}
}

func TestIsCommand(t *testing.T) {
	for arg, want := range map[string]bool{"login": true, "cluster": true, "help": true, "serve": false, "--listen": false, "-h": false, "": false,
		"--context": true, "--server=http://x": true, "--insecure-skip-tls-verify": true, "--db": false, "--help": false, "--version": false, "-context": false} {
		if IsCommand(arg) != want {
			t.Errorf("IsCommand(%q) = %v", arg, !want)
		}
	}
}

func TestDigest(t *testing.T) {
	// printf %s secret | sha1sum
	if got := digest("secret"); got != "e5e9fa1ba31ecd1ae84f75caaa474f3a663f05f4" {
		t.Errorf("digest: %s", got)
	}
}
