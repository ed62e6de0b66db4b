package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestHostCheck: `host check` runs a create's checks against a registered
// host and changes nothing on it: a ready host passes (for every role);
// a host whose kubelet port is taken fails, with the port and what to do,
// through the API and the CLI (exit 1); nothing zke makes is left on it.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true, Containerd: true})
	h := hosts[0]
	inst := startInstance(t, "")
	admin := inst.admin(t)
	admin.mustDo(http.MethodPost, apiPath+"/hosts", map[string]any{
		"name": h.Name, "address": h.Address, "sshKey": string(h.ClientKeyPEM)}, http.StatusCreated)

	res := admin.mustDo(http.MethodPost, apiPath+"/hosts/"+h.Name+"?action=check", nil, http.StatusOK)
	if res["ok"] != true || len(anySlice(res["problems"])) != 0 || len(anySlice(res["roles"])) != 3 {
		t.Fatalf("check of a ready host: %v", res)
	}
	if log := strings.Join(strSlice(res["log"]), "\n"); !strings.Contains(log, "CRI runtime") {
		t.Errorf("the check's log does not show the runtime checks:\n%s", log)
	}

	// The kubelet's port taken: a worker check fails, naming it.
	busy, err := h.Start("busybox", "nc", "-l", "-p", "10250")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Stop()
	eventually(t, 20*time.Second, "port 10250 listening on "+h.Name, func() (bool, string) {
		out, err := h.Run(t.Context(), "busybox netstat -ltn")
		return err == nil && strings.Contains(out, ":10250 "), out
	})
	res = admin.mustDo(http.MethodPost, apiPath+"/hosts/"+h.Name+"?action=check", map[string]any{"roles": []string{"worker"}}, http.StatusOK)
	problems := strings.Join(strSlice(res["problems"]), "\n")
	if res["ok"] != false || !strings.Contains(problems, "port 10250 is in use") {
		t.Fatalf("check with the kubelet's port taken: ok %v, problems %q", res["ok"], problems)
	}
	status, body := admin.do(http.MethodPost, apiPath+"/hosts/no-such-host?action=check", nil)
	if status != http.StatusNotFound && status != http.StatusUnprocessableEntity {
		t.Errorf("check of an unknown host: %d %v", status, body)
	}

	// The CLI: the same verdict, exit 1.
	u := newCLIUser(t)
	if _, stderr, code := u.run([]string{"SINGLECLOUD_PASSWORD=" + inst.password}, "login", "--server", inst.URL, "--user", "admin"); code != 0 {
		t.Fatalf("login: %d %s", code, stderr)
	}
	stdout, stderr, code := u.run(nil, "host", "check", h.Name, "--roles", "worker")
	if code != 1 || !strings.Contains(stdout, "port 10250 is in use") || !strings.Contains(stdout, "FAILED") {
		t.Errorf("singlecloud host check exited %d:\n%s\n%s", code, stdout, stderr)
	}

	// Nothing of zke's on the host: no container.
	if n := len(zkeContainers(t, h)); n != 0 {
		t.Errorf("the check left %d of zke's containers on the host", n)
	}
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func strSlice(v any) []string {
	var out []string
	for _, x := range anySlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
