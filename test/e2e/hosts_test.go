package e2e

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestHostsRegistryAndConnectivity: three testbed hosts registered through
// the API become Reachable with their system information; one host's sshd
// stopped (SIGSTOP: it accepts connections and never answers) turns it
// Unreachable with a reason and a hint within the probe bound, and
// SIGCONT brings it back; a command on a label selector runs on all three;
// a command's output is followed over a websocket as it comes;
// a cluster is created from the hosts' names and a host it uses cannot be
// deleted; the key is never shown; a non-admin sees no host; bad input
// changes nothing.
func TestHostsRegistryAndConnectivity(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "", "--host-probe-interval=1s")
	admin := inst.admin(t)

	status, resp := admin.do(http.MethodPost, apiPath+"/hosts", map[string]any{"name": "Bad Name", "address": "10.0.0.300", "sshKey": "nope"})
	expectError(t, "a bad host", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "name", "address", "sshKey")
	for _, h := range hosts {
		body := admin.mustDo(http.MethodPost, apiPath+"/hosts", map[string]any{
			"name": h.Name, "address": h.Address, "sshKey": string(h.ClientKeyPEM), "labels": map[string]string{"group": "e2e"},
		}, http.StatusCreated)
		if strings.Contains(string(mustJSON(t, body)), "PRIVATE KEY") {
			t.Fatalf("the host's key is echoed: %v", body)
		}
	}
	for _, h := range hosts {
		waitHost(t, admin, h.Name, "Reachable", 60*time.Second)
	}
	_, h1 := admin.do(http.MethodGet, apiPath+"/hosts/"+hosts[0].Name, nil)
	sys, _ := h1["system"].(map[string]any)
	if str(sys["kernel"]) == "" || str(sys["arch"]) == "" || sys["cpus"].(float64) < 1 || sys["memoryBytes"].(float64) <= 0 || str(h1["hostKey"]) == "" {
		t.Errorf("host %s shows %v, want its kernel, arch, CPUs, memory and pinned host key", hosts[0].Name, h1)
	}
	list := admin.mustDo(http.MethodGet, apiPath+"/hosts", nil, http.StatusOK)
	if data, _ := list["data"].([]any); len(data) != 3 || strings.Contains(string(mustJSON(t, list)), "PRIVATE KEY") {
		t.Errorf("host list: %d hosts (want 3) or a key shown", len(data))
	}

	// A command on a selector runs on all three, its argv quoted word
	// by word; one on a single host reports its exit code.
	cmd := admin.mustDo(http.MethodPost, apiPath+"/hosts/commands?selector=group%3De2e", map[string]any{
		"command": []string{"echo", "hello; $USER"}, "timeoutSeconds": 30}, http.StatusAccepted)
	done := waitCommand(t, admin, str(cmd["id"]))
	if results, _ := done["results"].([]any); len(results) != 3 || str(done["startedBy"]) != "admin" {
		t.Errorf("the command on group=e2e: %v, want 3 results started by admin", done)
	} else {
		for _, r := range results {
			res := r.(map[string]any)
			if res["exitCode"].(float64) != 0 || str(res["stdout"]) != "hello; $USER\n" {
				t.Errorf("host %s: %v, want the literal words echoed", res["host"], res)
			}
		}
	}
	one := admin.mustDo(http.MethodPost, apiPath+"/hosts/"+hosts[0].Name+"/commands", map[string]any{"command": []string{"sh", "-c", "echo oops >&2; exit 3"}}, http.StatusAccepted)
	if res := waitCommand(t, admin, str(one["id"]))["results"].([]any)[0].(map[string]any); res["exitCode"].(float64) != 3 || str(res["stderr"]) != "oops\n" {
		t.Errorf("a failing command: %v, want exit code 3 and its stderr", res)
	}
	followHostCommand(t, admin, hosts[0].Name)

	// sshd stopped on the second host: Unreachable, with why.
	if err := hosts[1].SignalSSHD(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	down := waitHost(t, admin, hosts[1].Name, "Unreachable", 90*time.Second)
	t.Logf("Unreachable %s after sshd stopped: %s", time.Since(stopped).Round(time.Second), down["reason"])
	if str(down["reason"]) == "" || str(down["hint"]) == "" {
		t.Errorf("an Unreachable host without a reason and a hint: %v", down)
	}
	if err := hosts[1].SignalSSHD(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitHost(t, admin, hosts[1].Name, "Reachable", 90*time.Second)

	// A cluster created from the registered hosts' names: address, SSH
	// login and key come from the registry; a host in use is not deleted.
	body := clusterBody("byhost", hosts[0].Gateway+":8080", hosts)
	delete(body, "sshKey")
	for _, n := range body["nodes"].([]map[string]any) {
		n["host"] = n["name"]
		delete(n, "address")
	}
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	// /metrics scraped during the install shows its step histogram
	// moving: some steps counted halfway, more at the end.
	during := -1.0
	frames, _ := admin.followZkelog(t, "byhost", 0, 10*time.Minute, func(f zkelogFrame) {
		if during < 0 && f.Type == "progress" && f.Total > 0 && f.Index > f.Total/2 && f.Index < f.Total {
			during = createSteps(t, admin)
		}
	})
	if after := createSteps(t, admin); during <= 0 || after <= during {
		t.Errorf("create steps in /metrics: %v halfway through the install, %v at its end; want both counted and moving", during, after)
	} else {
		t.Logf("create steps in /metrics: %v halfway through the install, %v at its end", during, after)
	}
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the create from host names ended %+v", last)
	}
	status, resp = admin.do(http.MethodDelete, apiPath+"/hosts/"+hosts[2].Name, nil)
	expectError(t, "delete a host in use", status, resp, http.StatusConflict, "InvalidState", "byhost")
	admin.deleteCluster(t, "byhost", 5*time.Minute)

	// Only the admin sees or changes hosts.
	admin.mustDo(http.MethodPost, apiPath+"/users", map[string]any{"name": "viewer", "password": digest("viewer-pw")}, http.StatusCreated)
	viewer := inst.login(t, "viewer", "viewer-pw")
	if status, _ := viewer.do(http.MethodGet, apiPath+"/hosts", nil); status != http.StatusForbidden {
		t.Errorf("a non-admin listing hosts got %d, want 403", status)
	}
	admin.mustDo(http.MethodDelete, apiPath+"/hosts/"+hosts[2].Name, nil, http.StatusNoContent)
	if status, _ := admin.do(http.MethodGet, apiPath+"/hosts/"+hosts[2].Name, nil); status != http.StatusNotFound {
		t.Errorf("a deleted host answers %d", status)
	}
}

// waitHost waits (bounded) for host name to show status and returns it.
func waitHost(t *testing.T, admin *client, name, status string, d time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	eventually(t, d, "host "+name+" "+status, func() (bool, string) {
		_, last = admin.do(http.MethodGet, apiPath+"/hosts/"+name, nil)
		return str(last["status"]) == status, str(last["status"]) + " " + str(last["reason"])
	})
	return last
}

// waitCommand waits (bounded) for the host command id to finish and
// returns its record.
func waitCommand(t *testing.T, admin *client, id string) map[string]any {
	t.Helper()
	var last map[string]any
	eventually(t, 60*time.Second, "host command "+id+" finished", func() (bool, string) {
		_, last = admin.do(http.MethodGet, apiPath+"/hosts/commands/"+id, nil)
		return str(last["state"]) == "Finished", str(last["state"])
	})
	return last
}

// hostCommandMessage is one message of a host command's websocket.
type hostCommandMessage struct {
	Type     string         `json:"type"`
	Record   map[string]any `json:"record"`
	Host     string         `json:"host"`
	Stream   string         `json:"stream"`
	Offset   *int64         `json:"offset"`
	Data     string         `json:"data"`
	Done     bool           `json:"done"`
	ExitCode *int           `json:"exitCode"`
	Error    string         `json:"error"`
}

// followHostCommand runs a command that prints, sleeps and prints again
// on host and follows it over its websocket (GET
// /apis/ws.zcloud.cn/v1/hosts/commands/{id}?token=, as every websocket):
// the record, Running; "one" while the command still runs (its record says
// so), "two" about 2 s later; the host's done marker with exit code 0; the
// finished record; a normal close. An unknown command is a 404 before any
// upgrade, on that path and on the REST path with ?watch=true (the token
// in the Authorization header).
func followHostCommand(t *testing.T, admin *client, host string) {
	t.Helper()
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	base := strings.Replace(admin.base, "http://", "ws://", 1)
	wsURL := func(id string) string {
		return base + "/apis/ws.zcloud.cn/v1/hosts/commands/" + id + "?token=" + url.QueryEscape(admin.token)
	}
	const unknown = "20260101-000000.000-000000"
	for _, u := range []struct {
		url    string
		header http.Header
	}{
		{wsURL(unknown), nil},
		{base + apiPath + "/hosts/commands/" + unknown + "?watch=true", http.Header{"Authorization": {"Bearer " + admin.token}}},
	} {
		if _, resp, err := dialer.Dial(u.url, u.header); !errors.Is(err, websocket.ErrBadHandshake) || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Errorf("following an unknown command (header %v): %v (%v), want a 404 before the upgrade", u.header != nil, err, resp)
		}
	}

	cmd := admin.mustDo(http.MethodPost, apiPath+"/hosts/"+host+"/commands", map[string]any{
		"command": []string{"sh", "-c", "echo one; sleep 2; echo two"}, "timeoutSeconds": 30}, http.StatusAccepted)
	id := str(cmd["id"])
	conn, resp, err := dialer.Dial(wsURL(id), nil)
	if err != nil {
		t.Fatalf("host command websocket: %v (%v)", err, resp)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	var msgs []hostCommandMessage
	var stdout string
	var oneAt, twoAt time.Time
	closeCode := -1
	for {
		_, raw, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				closeCode = ce.Code
			} else {
				t.Errorf("host command websocket ended with %v after %d messages", err, len(msgs))
			}
			break
		}
		var m hostCommandMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("host command message %s: %v", raw, err)
		}
		msgs = append(msgs, m)
		if m.Type != "output" || m.Stream != "stdout" {
			continue
		}
		stdout += m.Data
		if oneAt.IsZero() && strings.Contains(stdout, "one\n") {
			oneAt = time.Now()
			if _, rec := admin.do(http.MethodGet, apiPath+"/hosts/commands/"+id, nil); str(rec["state"]) != "Running" {
				t.Errorf("when \"one\" arrived the command was %s, want it still Running", rec["state"])
			}
		}
		if twoAt.IsZero() && strings.Contains(stdout, "two\n") {
			twoAt = time.Now()
		}
	}
	t.Logf("host command stream: %d messages, \"two\" %s after \"one\", close code %d", len(msgs), twoAt.Sub(oneAt).Round(time.Millisecond), closeCode)
	if len(msgs) < 4 || msgs[0].Type != "record" || str(msgs[0].Record["state"]) != "Running" || str(msgs[0].Record["id"]) != id {
		t.Fatalf("host command stream: %+v, want the record, Running, first", msgs)
	}
	if oneAt.IsZero() || twoAt.IsZero() || twoAt.Sub(oneAt) < time.Second || stdout != "one\ntwo\n" {
		t.Errorf("stdout %q: \"one\" at %v, \"two\" at %v; want one, then two about 2 s later", stdout, oneAt, twoAt)
	}
	done, last := msgs[len(msgs)-2], msgs[len(msgs)-1]
	if done.Type != "done" || !done.Done || done.Host != host || done.ExitCode == nil || *done.ExitCode != 0 || done.Error != "" {
		t.Errorf("the message before the last: %+v, want %s done with exit code 0", done, host)
	}
	results, _ := last.Record["results"].([]any)
	if last.Type != "finished" || str(last.Record["state"]) != "Finished" || len(results) != 1 || str(results[0].(map[string]any)["stdout"]) != "one\ntwo\n" {
		t.Errorf("the last message: %+v, want the finished record with the output", last)
	}
	if closeCode != websocket.CloseNormalClosure {
		t.Errorf("the stream closed with %d, want a normal close", closeCode)
	}
}

// createSteps sums the create steps /metrics has counted so far
// (singlecloud_operation_step_duration_seconds_count of kind create).
func createSteps(t *testing.T, admin *client) float64 {
	t.Helper()
	code, body := admin.raw(http.MethodGet, "/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	sum := 0.0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "singlecloud_operation_step_duration_seconds_count{") || !strings.Contains(line, `kind="create"`) {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		sum += n
	}
	return sum
}
