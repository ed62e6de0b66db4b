package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// cliUser is one person at a shell: a home of their own (so the CLI's
// config lands in <home>/.config/singlecloud) and the singlecloud binary
// as the command line.
type cliUser struct {
	t    *testing.T
	home string
	env  []string
}

func newCLIUser(t *testing.T) *cliUser {
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "PATH=" + os.Getenv("PATH"), "TERM=xterm", "LANG=C.UTF-8"}
	return &cliUser{t: t, home: home, env: env}
}

// run runs the CLI without a terminal (pipes) and returns its outputs
// and exit code.
func (u *cliUser) run(extraEnv []string, args ...string) (stdout, stderr string, code int) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(append([]string{}, u.env...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		u.t.Fatalf("singlecloud %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// mustRun is run expecting exit 0.
func (u *cliUser) mustRun(args ...string) string {
	u.t.Helper()
	out, errs, code := u.run(nil, args...)
	if code != 0 {
		u.t.Fatalf("singlecloud %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// console is the CLI run in a pseudo-terminal, as a person sees it: one
// screen for stdout and stderr, keys typed into it.
type console struct {
	t    *testing.T
	cmd  *exec.Cmd
	ptmx *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (u *cliUser) console(args ...string) *console {
	u.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = u.env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 140})
	if err != nil {
		u.t.Fatalf("start singlecloud %s in a pty: %v", strings.Join(args, " "), err)
	}
	c := &console{t: u.t, cmd: cmd, ptmx: ptmx, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	u.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = ptmx.Close()
	})
	return c
}

func (c *console) screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// expect waits until the screen shows s.
func (c *console) expect(s string, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(c.screen(), s) {
		if time.Now().After(deadline) {
			c.t.Fatalf("the terminal does not show %q within %s:\n%s", s, d, c.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNoEcho waits until the program has turned the terminal's echo off
// (as a password prompt does), so that what is typed next is not shown.
func (c *console) waitNoEcho() {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(c.ptmx.Fd()), unix.TCGETS)
		if err == nil && tio.Lflag&unix.ECHO == 0 {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the terminal's echo is still on at the password prompt (%v):\n%s", err, c.screen())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *console) typeIn(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.ptmx, s); err != nil {
		c.t.Fatal(err)
	}
}

// wait waits for the program to exit and returns its exit code.
func (c *console) wait(d time.Duration) int {
	c.t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		<-c.done // the last output
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			c.t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		c.t.Fatalf("singlecloud did not exit within %s:\n%s", d, c.screen())
	}
	return -1
}

// loginAt logs u in as user through the password prompt of a terminal.
func (u *cliUser) loginAt(inst *instance, user, password string, extra ...string) {
	u.t.Helper()
	c := u.console(append([]string{"login", "--server", inst.URL, "--user", user}, extra...)...)
	c.expect("Password for "+user, 10*time.Second)
	c.waitNoEcho()
	c.typeIn(password + "\r")
	if code := c.wait(30 * time.Second); code != 0 {
		u.t.Fatalf("login exited %d:\n%s", code, c.screen())
	}
	if s := c.screen(); !strings.Contains(s, "Logged in to "+inst.URL+" as "+user) || strings.Contains(s, password) {
		u.t.Fatalf("login shows %q (the password must not appear)", s)
	}
}

// TestCLIImportedClusterAsAPersonWould drives the command line through a
// pseudo-terminal and pipes against a real server and a real
// kube-apiserver: login at the password prompt (no echo), the config
// file's modes, whoami, import, wait, every -o of list and get, the
// kubeconfig (0600), get -o yaml back into apply (refused for an imported
// cluster, with the field named), validation errors with their field
// paths and exit code 1, usage errors with exit code 2, users and
// contexts, list --watch on events, logout.
func TestCLIImportedClusterAsAPersonWould(t *testing.T) {
	testbed.Require(t, testbed.NeedTestbin)
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	inst := startInstance(t, "")
	u := newCLIUser(t)

	if _, stderr, code := u.run([]string{"SINGLECLOUD_PASSWORD=wrong"}, "login", "--server", inst.URL, "--user", "admin"); code != 1 || !strings.Contains(stderr, "the user or the password is wrong") {
		t.Errorf("a wrong password: exit %d, stderr %q", code, stderr)
	}
	u.loginAt(inst, "admin", inst.password)
	cfgDir := filepath.Join(u.home, ".config", "singlecloud")
	for path, want := range map[string]os.FileMode{cfgDir: 0o700, filepath.Join(cfgDir, "config.yaml"): 0o600} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, st.Mode().Perm(), want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(cfgDir, "config.yaml")); strings.Contains(string(b), inst.password) || strings.Contains(string(b), digest(inst.password)) || !strings.Contains(string(b), "token: ") {
		t.Errorf("the config holds the password or no token:\n%s", b)
	}
	if out := u.mustRun("whoami"); !strings.Contains(out, "admin") || !strings.Contains(out, inst.URL) {
		t.Errorf("whoami: %s", out)
	}

	kc := filepath.Join(u.home, "live.kubeconfig")
	if err := os.WriteFile(kc, cp.Kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := u.mustRun("cluster", "import", "live", "--kubeconfig", kc); !strings.Contains(out, "cluster/live imported") {
		t.Errorf("import: %s", out)
	}
	u.mustRun("cluster", "wait", "live", "--for=status=Running", "--timeout=60s")

	table := u.mustRun("cluster", "list")
	if !strings.Contains(table, "NAME") || !strings.Contains(table, "live") || !strings.Contains(table, "Running") {
		t.Errorf("cluster list:\n%s", table)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(u.mustRun("cluster", "list", "-o", "json")), &list); err != nil || len(list) != 1 || list[0]["name"] != "live" {
		t.Errorf("cluster list -o json: %v %v", err, list)
	}
	if err := yaml.Unmarshal([]byte(u.mustRun("cluster", "list", "-o", "yaml")), &list); err != nil || len(list) != 1 || list[0]["status"] != "Running" {
		t.Errorf("cluster list -o yaml: %v %v", err, list)
	}
	if out := u.mustRun("cluster", "list", "-o", "name"); out != "cluster/live\n" {
		t.Errorf("cluster list -o name: %q", out)
	}
	if out := u.mustRun("cluster", "list", "-o", "wide"); !strings.Contains(out, "imported") {
		t.Errorf("cluster list -o wide:\n%s", out)
	}

	// The kubeconfig: to a file 0600, or to stdout.
	out := filepath.Join(u.home, "dl", "live.yaml")
	u.mustRun("cluster", "kubeconfig", "live", "-f", out)
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the downloaded kubeconfig: %v %v, want mode 0600", err, st)
	}
	if s := u.mustRun("cluster", "kubeconfig", "live"); !strings.Contains(s, "clusters:") {
		t.Errorf("the kubeconfig on stdout: %q", s)
	}

	// get -o yaml parses back; apply of it is refused for an imported
	// cluster, naming the field, exit 1.
	getYAML := u.mustRun("cluster", "get", "live", "-o", "yaml")
	var got map[string]any
	if err := yaml.Unmarshal([]byte(getYAML), &got); err != nil || got["name"] != "live" || got["imported"] != true {
		t.Fatalf("cluster get -o yaml: %v\n%s", err, getYAML)
	}
	liveFile := filepath.Join(u.home, "live.yaml")
	if err := os.WriteFile(liveFile, []byte(getYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := u.run(nil, "cluster", "apply", "-f", liveFile); code != 1 || !strings.Contains(stderr, "name: cluster live is imported") || stdout != "" {
		t.Errorf("apply to an imported cluster: exit %d, stdout %q, stderr %q; want 1 and the field name", code, stdout, stderr)
	}
	bad := filepath.Join(u.home, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: lab\nsshUser: root\nnodes:\n- name: n1\n  address: 10.0.0.300\n  roles: [controlplane, etcd, worker]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := u.run(nil, "cluster", "create", "-f", bad); code != 1 || !strings.Contains(stderr, "Error from server (InvalidOption)") || !strings.Contains(stderr, "\n  nodes[0].address: ") || !strings.Contains(stderr, "\n  sshKey: ") {
		t.Errorf("an invalid create: exit %d, stderr %q; want 1 and one line per field", code, stderr)
	}
	if _, stderr, code := u.run(nil, "cluster", "get", "nope"); code != 1 || !strings.Contains(stderr, "(NotFound)") {
		t.Errorf("get of a missing cluster: exit %d, stderr %q", code, stderr)
	}
	for _, args := range [][]string{{"cluster", "get"}, {"cluster", "list", "-o", "bogus"}, {"cluster", "list", "--no-such-flag"}, {"no-such-command"}, {"cluster", "wait", "live", "--for=ready"}} {
		if _, stderr, code := u.run(nil, args...); code != 2 || !strings.Contains(stderr, "--help") {
			t.Errorf("singlecloud %s: exit %d, stderr %q; want 2 and where the usage is", strings.Join(args, " "), code, stderr)
		}
	}

	// Users and contexts: ann, granted live/default, logs in in a context
	// of her own; the admin's stays.
	if _, stderr, code := u.run([]string{"SINGLECLOUD_NEW_PASSWORD=ann-secret"}, "user", "create", "ann"); code != 0 {
		t.Fatalf("user create: %d %s", code, stderr)
	}
	if s := u.mustRun("user", "grant", "ann", "--cluster", "live", "--namespace", "default"); !strings.Contains(s, "live/default") {
		t.Errorf("grant: %s", s)
	}
	if s := u.mustRun("user", "list"); !strings.Contains(s, "ann") || !strings.Contains(s, "live/default") {
		t.Errorf("user list:\n%s", s)
	}
	u.loginAt(inst, "ann", "ann-secret", "--context", "ann")
	if s := u.mustRun("whoami"); !strings.Contains(s, "ann") || !strings.Contains(s, "live/default") {
		t.Errorf("whoami as ann: %s", s)
	}
	if s := u.mustRun("config", "get-contexts"); !strings.Contains(s, "*         ann") || !strings.Contains(s, "admin@") {
		t.Errorf("get-contexts:\n%s", s)
	}
	if _, stderr, code := u.run(nil, "user", "create", "bob", "--password-file", kc); code != 1 || !strings.Contains(stderr, "PermissionDenied") {
		t.Errorf("ann creating a user: exit %d, stderr %q", code, stderr)
	}
	// ann changes her password at the prompts; her context logs in again.
	pw := u.console("user", "passwd")
	for _, step := range []struct{ prompt, typed string }{{"Current password for ann", "ann-secret"}, {"New password for ann", "ann-new"}, {"Again", "ann-new"}} {
		pw.expect(step.prompt, 10*time.Second)
		pw.waitNoEcho()
		pw.typeIn(step.typed + "\r")
	}
	if code := pw.wait(30 * time.Second); code != 0 || strings.Contains(pw.screen(), "ann-new") {
		t.Errorf("user passwd: exit %d:\n%s", code, pw.screen())
	}
	if s := u.mustRun("whoami"); !strings.Contains(s, "ann") {
		t.Errorf("whoami after passwd: %s", s)
	}
	u.mustRun("config", "use-context", "admin@"+strings.TrimPrefix(inst.URL, "http://"))
	u.mustRun("user", "delete", "ann")
	if _, stderr, code := u.run(nil, "--context", "ann", "whoami"); code != 1 || !strings.Contains(stderr, "(Unauthorized)") || !strings.Contains(stderr, "hint: log in again") {
		t.Errorf("a deleted user's context: exit %d, stderr %q", code, stderr)
	}
	if _, stderr, code := u.run(nil, "cluster", "retry", "live"); code != 1 || !strings.Contains(stderr, "(InvalidState)") {
		t.Errorf("retry of a Running cluster: exit %d, stderr %q", code, stderr)
	}

	// list --watch prints the list again when an event comes; events
	// prints it.
	w := u.console("cluster", "list", "--watch")
	w.expect("live", 10*time.Second)
	ev := u.console("events", "-o", "json")
	time.Sleep(time.Second) // events has subscribed: the server keeps no history
	u.mustRun("cluster", "import", "live2", "--kubeconfig", kc)
	w.expect("live2", 20*time.Second)
	ev.expect(`"cluster":"live2"`, 20*time.Second)
	for name, c := range map[string]*console{"list --watch": w, "events": ev} {
		c.typeIn("\x03") // Ctrl-C
		if code := c.wait(10 * time.Second); code != 0 {
			t.Errorf("%s ended by Ctrl-C: exit %d", name, code)
		}
	}

	// The other resources: the ready clusters are environments; no hosts.
	if s := u.mustRun("environment", "list", "-o", "name"); !strings.Contains(s, "environment/live\n") {
		t.Errorf("environment list: %q", s)
	}
	if s := u.mustRun("host", "list"); s != "No hosts found.\n" {
		t.Errorf("host list: %q", s)
	}
	if s := u.mustRun("app", "list", "live"); s != "No applications found.\n" {
		t.Errorf("app list: %q", s)
	}
	u.mustRun("cluster", "logs", "live")
	if s := u.mustRun("cluster", "delete", "live2"); !strings.Contains(s, "cluster/live2 deleting") {
		t.Errorf("delete: %q", s)
	}
	u.mustRun("cluster", "wait", "live2", "--for=delete", "--timeout=30s")
	if s := u.mustRun("completion", "bash"); !strings.Contains(s, "singlecloud") {
		t.Errorf("completion bash: %.200s", s)
	}

	u.mustRun("logout")
	if _, stderr, code := u.run(nil, "whoami"); code != 1 || !strings.Contains(stderr, "not logged in") {
		t.Errorf("whoami after logout: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIFollowsACreate creates a cluster on three testbed hosts from a
// YAML file and follows the install with `cluster logs -f` in a terminal:
// the progress bar reaches 100 % and the exit code is 0. Then get -o yaml
// goes back into apply unchanged, and its update is followed too.
func TestCLIFollowsACreate(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "")
	u := newCLIUser(t)
	u.loginAt(inst, "admin", inst.password)

	body, err := yaml.Marshal(clusterBody("lab", hosts[0].Gateway+":8080", hosts))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(u.home, "lab.yaml")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	u.mustRun("cluster", "create", "-f", file)
	c := u.console("cluster", "logs", "lab", "-f")
	start := time.Now()
	code := c.wait(10 * time.Minute)
	screen := c.screen()
	t.Logf("logs -f ended after %s with exit %d; the terminal's last lines:\n%s", time.Since(start).Round(time.Second), code, lastBytes(screen, 1500))
	if code != 0 || !strings.Contains(screen, "100%") || !strings.Contains(screen, "cluster is Running") {
		t.Fatalf("logs -f: exit %d, want 0 with the bar at 100%% and the result:\n%s", code, lastBytes(screen, 4000))
	}
	if !strings.Contains(screen, "step ") {
		t.Errorf("the bar never named a step:\n%s", lastBytes(screen, 4000))
	}
	u.mustRun("cluster", "wait", "lab", "--for=status=Running", "--timeout=1m")

	getYAML := u.mustRun("cluster", "get", "lab", "-o", "yaml")
	if err := os.WriteFile(file, []byte(getYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := u.mustRun("cluster", "apply", "-f", file); !strings.Contains(s, "cluster/lab configured") {
		t.Errorf("apply of get -o yaml: %s", s)
	}
	if out, stderr, code := u.run(nil, "cluster", "logs", "lab", "-f"); code != 0 || !strings.Contains(out, "cluster is Running") {
		t.Errorf("the update's logs -f: exit %d\n%s\n%s", code, lastBytes(out, 2000), stderr)
	}

	// The history, the certificates, a snapshot taken and downloaded.
	if s := u.mustRun("cluster", "operations", "lab"); !strings.Contains(s, "create") || !strings.Contains(s, "update") || !strings.Contains(s, "succeeded") {
		t.Errorf("operations:\n%s", s)
	}
	if s := u.mustRun("cluster", "certificates", "lab", "-o", "wide"); !strings.Contains(s, "kube-ca") || !strings.Contains(s, "DAYS LEFT") {
		t.Errorf("certificates:\n%s", s)
	}
	if s := u.mustRun("certificates", "--expiring-within", "3650d", "-o", "name"); !strings.Contains(s, "certificate/") {
		t.Errorf("the fleet's certificates: %q", s)
	}
	if s := u.mustRun("snapshot", "take", "lab"); !strings.Contains(s, "taken") {
		t.Errorf("snapshot take: %q", s)
	}
	var snaps []map[string]any
	if err := json.Unmarshal([]byte(u.mustRun("snapshot", "list", "lab", "-o", "json")), &snaps); err != nil || len(snaps) == 0 {
		t.Fatalf("snapshot list: %v %v", err, snaps)
	}
	snapFile := filepath.Join(u.home, "lab.db")
	u.mustRun("snapshot", "download", "lab", str(snaps[0]["id"]), "-f", snapFile)
	if st, err := os.Stat(snapFile); err != nil || st.Mode().Perm() != 0o600 || st.Size() != int64(snaps[0]["size"].(float64)) {
		t.Errorf("the downloaded snapshot: %v %v, want mode 0600 and %v bytes", err, st, snaps[0]["size"])
	}
	if _, stderr, code := u.run(nil, "cluster", "restore", "lab"); code != 2 || !strings.Contains(stderr, "snapshot") {
		t.Errorf("restore without --snapshot: exit %d %q", code, stderr)
	}

	// An update with a key the hosts refuse fails at connect: logs -f
	// exits 1 with the error, the node and what to do.
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(getYAML), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["sshKey"] = otherKeyPEM(t)
	broken, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, broken, 0o600); err != nil {
		t.Fatal(err)
	}
	u.mustRun("cluster", "apply", "-f", file)
	out, stderr, code := u.run(nil, "cluster", "logs", "lab", "-f")
	t.Logf("logs -f of the failing update: exit %d, stderr:\n%s", code, stderr)
	if code != 1 || !strings.Contains(stderr, "error: the operation on cluster lab failed at step connect") || !strings.Contains(stderr, "authorized_keys") ||
		!strings.Contains(stderr, "hint: ") || !strings.Contains(stderr, "singlecloud cluster retry lab") {
		t.Errorf("logs -f of a failing update: exit %d, want 1 with the error and a hint\n%s\n%s", code, lastBytes(out, 2000), stderr)
	}
	if strings.Contains(out+stderr, "PRIVATE KEY") {
		t.Error("the key was printed")
	}
}

// lastBytes is the end of s, at most n bytes.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestCLIServeDispatch: flags only, or serve, is the server as before
// (its --help and --version); a command is the command line.
func TestCLIServeDispatch(t *testing.T) {
	u := newCLIUser(t)
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--help"}, 0, []string{"-listen", "SINGLECLOUD_DB", "singlecloud help"}},
		{[]string{"serve", "--help"}, 0, []string{"-listen", "-tls-cert"}},
		{[]string{"serve", "--version"}, 0, []string{"commit: "}},
		{[]string{"--no-such-flag"}, 2, []string{"-no-such-flag"}},
		{[]string{"help"}, 0, []string{"cluster", "login", "completion", "serve"}},
		{[]string{"cluster", "--help"}, 0, []string{"logs", "kubeconfig", "wait"}},
	} {
		out, errs, code := u.run(nil, tc.args...)
		for _, w := range tc.want {
			if code != tc.code || !strings.Contains(out+errs, w) {
				t.Errorf("singlecloud %s: exit %d (want %d), output lacks %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, w, out, errs)
				break
			}
		}
	}
	// serve with flags serves.
	inst := &instance{t: t, dir: t.TempDir(), addr: freePort(t)}
	inst.URL = "http://" + inst.addr
	cmd := exec.Command(binary, "serve", "--listen", inst.addr, "--db", filepath.Join(inst.dir, "sc.db"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	eventually(t, 20*time.Second, "singlecloud serve answers", func() (bool, string) {
		resp, err := http.Get(inst.URL + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
