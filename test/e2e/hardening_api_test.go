package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestProbesAndVersionAsANewUser tries what a new user or a supervisor
// would, without a token: liveness, readiness, the version, and the
// command's --help and --version.
func TestProbesAndVersionAsANewUser(t *testing.T) {
	inst := startInstance(t, "")
	anon := inst.anonymous(t)
	for _, tt := range []struct {
		path string
		want map[string]any
	}{
		{"/healthz", map[string]any{"status": "ok"}},
		{"/readyz", map[string]any{"status": "ready", "checks": map[string]any{"store": "ok", "workers": "ok"}}},
	} {
		eventually(t, 10*time.Second, tt.path, func() (bool, string) {
			status, body := anon.do(http.MethodGet, tt.path, nil)
			js, _ := json.Marshal(body)
			want, _ := json.Marshal(tt.want)
			return status == http.StatusOK && string(js) == string(want), string(js)
		})
	}
	status, v := anon.do(http.MethodGet, apiPath+"/version", nil)
	if status != http.StatusOK || str(v["type"]) != "version" || str(v["version"]) == "" || !strings.HasPrefix(str(v["goVersion"]), "go1.") {
		t.Errorf("GET /version = %d %v", status, v)
	}
	// The version answer says which build, never anything about the
	// server's data.
	raw, _ := json.Marshal(v)
	for _, secret := range []string{inst.password, inst.dir} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("/version shows %q: %s", secret, raw)
		}
	}

	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "singlecloud "+str(v["version"])+"\n") || !strings.Contains(string(out), "commit: ") || !strings.Contains(string(out), "build date: ") {
		t.Errorf("singlecloud --version: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "--help").CombinedOutput()
	if err != nil {
		t.Errorf("singlecloud --help exits with %v, want 0:\n%s", err, out)
	}
	for _, flag := range []string{"-listen", "-db", "-admin-password", "-tls-cert", "-tls-key", "-health-interval", "-log-level", "-version", "SINGLECLOUD_DB"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("--help does not explain %s:\n%s", flag, out)
		}
	}
	out, err = exec.Command(binary, "--no-such-flag").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "-no-such-flag") {
		t.Errorf("an unknown flag: %v, want exit 2 naming it:\n%s", err, out)
	}
}

// connectionTimeoutBound is how long the binary may keep a slow or idle
// connection: its read and idle timeouts (30 s) and a margin. The attack
// of issue 8 found both still open at 45 s.
const connectionTimeoutBound = 42 * time.Second

// TestSlowBodyAndIdleConnectionAreClosed repeats the attack: a login whose
// body drips in a byte a second, and a keep-alive connection left idle.
// Both run at once; each must be closed by the server within the bound.
func TestSlowBodyAndIdleConnectionAreClosed(t *testing.T) {
	inst := startInstance(t, "")
	t.Run("slow body", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, inst.addr)
		head := "POST " + apiPath + "/users/admin?action=login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"password\":\""
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		stop, dripped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(dripped)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("a")); err != nil {
						return
					}
				}
			}
		}()
		d := serverClosesWithin(t, conn, connectionTimeoutBound)
		close(stop)
		<-dripped
		t.Logf("slow body: connection closed by the server after %s", d)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		t.Parallel()
		conn := dial(t, inst.addr)
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(conn)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("healthz on a keep-alive connection: %d close=%v", resp.StatusCode, resp.Close)
		}
		d := serverClosesWithin(t, readerConn{conn, rd}, connectionTimeoutBound)
		t.Logf("idle keep-alive: connection closed by the server after %s", d)
	})
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// readerConn reads through a bufio.Reader already holding the
// connection's input.
type readerConn struct {
	net.Conn
	rd *bufio.Reader
}

func (c readerConn) Read(p []byte) (int, error) { return c.rd.Read(p) }

// serverClosesWithin reads (discarding any answer) until the server
// closes conn, failing if that takes longer than bound.
func serverClosesWithin(t *testing.T, conn net.Conn, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(bound))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still held the connection open after %s", bound)
	}
	return time.Since(start)
}

// originalClusterBody is a create body as the original singlecloud's
// clients send it: sshPort as a string, a disabled loadBalance. Nothing
// listens on the nodes' SSH port, so the install fails at connect.
func originalClusterBody(t *testing.T, name string) map[string]any {
	return map[string]any{
		"name": name, "sshUser": "root", "sshKey": otherKeyPEM(t), "sshPort": "2",
		"singleCloudAddress": "127.0.0.9:8080", "network": map[string]any{"plugin": "bridge"},
		"loadBalance": map[string]any{"enable": false, "masterServer": "", "backupServer": "", "user": "", "password": ""},
		"nodes": []any{
			map[string]any{"name": "n1", "address": "127.0.0.1", "roles": []string{"controlplane", "etcd"}},
			map[string]any{"name": "n2", "address": "127.0.0.2", "roles": []string{"worker"}, "sshPort": "3"},
		},
	}
}

// TestOriginalClientsClusterBodies creates a cluster with the original
// client's body and PUTs back exactly what it fetched (plus a node), as
// such a client does; typos and changed read-only fields stay refused.
func TestOriginalClientsClusterBodies(t *testing.T) {
	inst := startInstance(t, "")
	admin := inst.admin(t)
	status, body := admin.do(http.MethodPost, apiPath+"/clusters", originalClusterBody(t, "lab"))
	if status != http.StatusCreated {
		t.Fatalf("create with sshPort as a string: %d %v", status, body)
	}
	admin.waitStatus("lab", "Unavailable", 60*time.Second)
	status, raw := admin.raw(http.MethodGet, apiPath+"/clusters/lab", nil)
	if status != http.StatusOK {
		t.Fatalf("get: %d %s", status, raw)
	}
	fetched := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := fetched()
	if m["sshPort"] != float64(2) {
		t.Errorf("sshPort shown as %#v, want the number 2", m["sshPort"])
	}
	links, _ := m["links"].(map[string]any)
	if str(links["update"]) != apiPath+"/clusters/lab" || str(links["remove"]) != apiPath+"/clusters/lab" {
		t.Errorf("admin's links %v lack update/remove", links)
	}
	if lb, _ := m["loadBalance"].(map[string]any); lb == nil || lb["enable"] != false {
		t.Errorf("loadBalance not kept: %v", m["loadBalance"])
	}

	refused := []struct {
		what   string
		change func(map[string]any)
		code   string
		names  string
	}{
		{"changed status", func(m map[string]any) { m["status"] = "Running" }, "InvalidOption", "status"},
		{"changed id", func(m map[string]any) { m["id"] = "prod" }, "InvalidOption", "id"},
		{"typo", func(m map[string]any) { m["singleCloudAdress"] = "x" }, "InvalidBodyContent", "singleCloudAdress"},
		{"load balancer enabled", func(m map[string]any) { m["loadBalance"] = map[string]any{"enable": true} }, "InvalidOption", "loadBalance.enable"},
	}
	for _, r := range refused {
		m := fetched()
		r.change(m)
		status, body := admin.do(http.MethodPut, apiPath+"/clusters/lab", m)
		expectError(t, "PUT with "+r.what, status, body, http.StatusUnprocessableEntity, r.code, r.names)
	}
	if _, now := admin.raw(http.MethodGet, apiPath+"/clusters/lab", nil); string(now) != string(raw) {
		t.Errorf("refused PUTs changed the cluster:\n%s\n%s", raw, now)
	}

	m = fetched()
	m["nodes"] = append(m["nodes"].([]any), map[string]any{"name": "n3", "address": "127.0.0.3", "roles": []string{"worker"}, "sshPort": "4"})
	status, body = admin.do(http.MethodPut, apiPath+"/clusters/lab", m)
	if status != http.StatusOK {
		t.Fatalf("PUT of the fetched body with a node added: %d %v", status, body)
	}
	after := admin.waitStatus("lab", "Unavailable", 60*time.Second)
	if nodes, _ := after["nodes"].([]any); len(nodes) != 3 {
		t.Errorf("after the PUT the cluster has nodes %v, want 3", after["nodes"])
	}
}
