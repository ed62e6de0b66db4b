package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// TestApplicationsOnAClusterAndOnHosts: the application-instance manager,
// black-box. An application of two versions (busybox, 3 + 1 replicas) is
// applied to a cluster created from registered hosts; singlecloud is
// killed (kill -9) while it installs and converges after its restart to
// Installed with level 100 and the right shares. A version with a broken
// command fails the install with a level below 100 naming the version and
// the node. Uninstall removes every object it made and nothing else. The
// same application applied to an environment of the same hosts runs
// Docker containers on them and reports levels the same way.
func TestApplicationsOnAClusterAndOnHosts(t *testing.T) {
	t.Parallel()
	testbed.Require(t, testbed.NeedRoot, testbed.NeedTestbin, testbed.NeedNamespaces, testbed.NeedSSHD, testbed.NeedDocker)
	hosts := testbed.StartHosts(t, 3, testbed.HostOptions{Docker: true})
	inst := startInstance(t, "", "--host-probe-interval=2s")
	admin := inst.admin(t)
	for _, h := range hosts {
		admin.mustDo(http.MethodPost, apiPath+"/hosts", map[string]any{
			"name": h.Name, "address": h.Address, "sshKey": string(h.ClientKeyPEM), "labels": map[string]string{"group": "apps"},
		}, http.StatusCreated)
	}
	for _, h := range hosts {
		waitHost(t, admin, h.Name, "Reachable", 60*time.Second)
	}
	body := clusterBody("apps", hosts[0].Gateway+":8080", hosts)
	delete(body, "sshKey")
	for _, n := range body["nodes"].([]map[string]any) {
		n["host"] = n["name"]
		delete(n, "address")
		delete(n, "taints")
	}
	admin.mustDo(http.MethodPost, apiPath+"/clusters", body, http.StatusCreated)
	frames, _ := admin.followZkelog(t, "apps", 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the create ended %+v", last)
	}
	envs := admin.mustDo(http.MethodGet, apiPath+"/environments", nil, http.StatusOK)
	if data, _ := envs["data"].([]any); len(data) != 1 || str(data[0].(map[string]any)["kind"]) != "kubernetes" {
		t.Errorf("environments: %v, want the cluster apps of kind kubernetes", envs)
	}
	kube := kubeClient(t, admin.kubeconfig("apps"))
	bystander := startBystander(t, kube)

	status, resp := admin.do(http.MethodPut, apiPath+"/environments/apps/applications/Web", map[string]any{
		"version": "", "deployments": []map[string]any{{"version": "v1", "image": "Bad Image", "replicas": -1}}})
	expectError(t, "a bad application", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "name", "version", "deployments[0].image", "deployments[0].replicas")

	app := apiPath + "/environments/apps/applications/web"
	admin.mustDo(http.MethodPut, app, appSpec("sleep 3600", 0), http.StatusAccepted)
	// kill -9 once the install has applied its objects and waits for
	// its replicas.
	eventually(t, 2*time.Minute, "the install applied its objects", func() (bool, string) {
		_, logs := admin.do(http.MethodGet, app+"/log", nil)
		text := mustJSON(t, logs)
		return strings.Contains(text, "applied: "), text
	})
	// The replicas count once Ready for 3 s: the install is still
	// waiting for them.
	if phase := str(admin.mustDo(http.MethodGet, app, nil, http.StatusOK)["phase"]); phase != "Installing" {
		t.Errorf("the install was %s already when singlecloud was killed, want Installing", phase)
	}
	inst.restart(syscall.SIGKILL)
	admin = inst.admin(t)
	installed := waitApp(t, admin, app, "Installed", 5*time.Minute)
	if text := mustJSON(t, admin.mustDo(http.MethodGet, app+"/log", nil, http.StatusOK)); strings.Count(text, "applied: ") != 2 || !strings.Contains(text, "Installing → Installed") {
		t.Errorf("after the restart the install applied again and then ended Installed; the log says %s", text)
	}
	st := admin.mustDo(http.MethodGet, app+"/status", nil, http.StatusOK)
	checkLevels(t, "cluster", st, 100, map[string][3]float64{"v1": {100, 3, 75}, "v2": {100, 1, 25}})
	for name, want := range map[string]int32{"web-v1": 3, "web-v2": 1} {
		d, err := kube.AppsV1().Deployments("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || *d.Spec.Replicas != want || d.Labels["app.singlecloud.io/managed-by"] != "singlecloud" {
			t.Errorf("deployment %s: %v (want %d replicas, labelled)", name, err, want)
		}
	}
	if svc, err := kube.CoreV1().Services("default").Get(context.Background(), "web", metav1.GetOptions{}); err != nil || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("service web: %v %v, want port 8080", err, svc)
	}

	// A broken version fails the install, naming it and its node.
	admin.mustDo(http.MethodPut, app, appSpec("echo broken; exit 1", 40), http.StatusAccepted)
	failed := waitApp(t, admin, app, "Failed", 3*time.Minute)
	if msg := str(failed["message"]); !strings.Contains(msg, "version v2") || !strings.Contains(msg, "node host") {
		t.Errorf("the failure says %q, want the version v2 and its node", msg)
	}
	st = admin.mustDo(http.MethodGet, app+"/status", nil, http.StatusOK)
	checkLevels(t, "cluster, broken v2", st, 75, map[string][3]float64{"v1": {100, 3, 75}, "v2": {0, 1, 25}})
	checkNodeReason(t, st, "v2")
	logs := admin.mustDo(http.MethodGet, app+"/log", nil, http.StatusOK)
	if text := mustJSON(t, logs); !strings.Contains(text, "Installing → Installed") || !strings.Contains(text, "Installing → Failed") {
		t.Errorf("the instance log lacks its phase changes: %s", text)
	}
	if str(installed["specHash"]) == str(failed["specHash"]) {
		t.Errorf("a changed spec kept its hash %s", str(failed["specHash"]))
	}

	// Uninstall removes what it made, and nothing else.
	admin.mustDo(http.MethodDelete, app, nil, http.StatusAccepted)
	waitApp(t, admin, app, "Uninstalled", 3*time.Minute)
	ours, err := kube.AppsV1().Deployments("").List(context.Background(), metav1.ListOptions{LabelSelector: "app.singlecloud.io/managed-by=singlecloud"})
	if err != nil || len(ours.Items) != 0 {
		t.Errorf("after uninstall: %d deployments of singlecloud left (%v)", len(ours.Items), err)
	}
	if svcs, err := kube.CoreV1().Services("").List(context.Background(), metav1.ListOptions{LabelSelector: "app.singlecloud.io/managed-by=singlecloud"}); err != nil || len(svcs.Items) != 0 {
		t.Errorf("after uninstall: services of singlecloud left (%v)", err)
	}
	if _, err := kube.AppsV1().Deployments("default").Get(context.Background(), bystander, metav1.GetOptions{}); err != nil {
		t.Errorf("the bystander deployment was touched: %v", err)
	}
	if pods, err := kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: "app.singlecloud.io/managed-by=singlecloud"}); err != nil || len(pods.Items) != 0 {
		t.Errorf("after uninstall: pods of singlecloud left (%v)", err)
	}
	admin.mustDo(http.MethodDelete, app, nil, http.StatusNoContent)
	if status, _ := admin.do(http.MethodGet, app, nil); status != http.StatusNotFound {
		t.Errorf("a purged instance answers %d", status)
	}

	// The same application on an environment of the hosts.
	admin.mustDo(http.MethodPost, apiPath+"/environments", map[string]any{"name": "edge", "kind": "hosts", "selector": "group=apps"}, http.StatusCreated)
	if out, err := hosts[0].Exec(context.Background(), "docker", "run", "-d", "--name", "not-ours", "--network", "host",
		"--label", "io.singlecloud.app=web", testbed.BusyboxImage, "sleep", "3600"); err != nil {
		t.Fatalf("a bystander container: %v %s", err, out)
	}
	edge := apiPath + "/environments/edge/applications/web"
	admin.mustDo(http.MethodPut, edge, appSpec("sleep 3600", 0), http.StatusAccepted)
	// The instance's log, live over a websocket, until it settles.
	lines, code := followAppLog(t, admin, "edge", "web", 3*time.Minute)
	if len(lines) == 0 || code != websocket.CloseNormalClosure || str(lines[len(lines)-1]["phase"]) != "Installed" {
		t.Errorf("the live log ended with close %d after %v, want 1000 after the Installed line", code, tail(lines, 3))
	}
	waitApp(t, admin, edge, "Installed", 3*time.Minute)
	st = admin.mustDo(http.MethodGet, edge+"/status", nil, http.StatusOK)
	checkLevels(t, "hosts", st, 100, map[string][3]float64{"v1": {100, 3, 75}, "v2": {100, 1, 25}})
	if n := countContainers(t, hosts); n != 4 {
		t.Errorf("%d containers of singlecloud on the hosts, want 4", n)
	}
	admin.mustDo(http.MethodPut, edge, appSpec("echo broken; exit 1", 30), http.StatusAccepted)
	failed = waitApp(t, admin, edge, "Failed", 3*time.Minute)
	if msg := str(failed["message"]); !strings.Contains(msg, "version v2") || !strings.Contains(msg, "node host") {
		t.Errorf("the failure on hosts says %q, want the version v2 and its host", msg)
	}
	st = admin.mustDo(http.MethodGet, edge+"/status", nil, http.StatusOK)
	checkLevels(t, "hosts, broken v2", st, 75, map[string][3]float64{"v1": {100, 3, 75}, "v2": {0, 1, 25}})
	checkNodeReason(t, st, "v2")
	status, resp = admin.do(http.MethodDelete, apiPath+"/environments/edge", nil)
	expectError(t, "delete an environment holding an application", status, resp, http.StatusConflict, "InvalidState", "web")
	admin.mustDo(http.MethodDelete, edge, nil, http.StatusAccepted)
	waitApp(t, admin, edge, "Uninstalled", 3*time.Minute)
	if n := countContainers(t, hosts); n != 0 {
		t.Errorf("%d containers of singlecloud left on the hosts after uninstall", n)
	}
	if out, err := hosts[0].Exec(context.Background(), "docker", "inspect", "--format", "{{.State.Running}}", "not-ours"); err != nil || strings.TrimSpace(out) != "true" {
		t.Errorf("the bystander container: %q %v, want it running", out, err)
	}
	admin.mustDo(http.MethodDelete, apiPath+"/environments/edge", nil, http.StatusNoContent)

	// A deleted cluster takes its application instances with it.
	admin.mustDo(http.MethodPut, app, appSpec("sleep 3600", 0), http.StatusAccepted)
	waitApp(t, admin, app, "Installed", 3*time.Minute)
	admin.mustDo(http.MethodDelete, apiPath+"/clusters/apps", nil, http.StatusAccepted)
	eventually(t, 5*time.Minute, "cluster apps deleted with its application", func() (bool, string) {
		code, _ := admin.do(http.MethodGet, app, nil)
		cluster, _ := admin.cluster("apps")
		return code == http.StatusNotFound && cluster == http.StatusNotFound, fmt.Sprintf("application %d, cluster %d", code, cluster)
	})
	inst.restart(syscall.SIGTERM)
	admin = inst.admin(t)
	if code, _ := admin.do(http.MethodGet, app, nil); code != http.StatusNotFound {
		t.Errorf("the deleted cluster's application is back after a restart: %d", code)
	}

	// Only the admin sees environments.
	admin.mustDo(http.MethodPost, apiPath+"/users", map[string]any{"name": "viewer", "password": digest("viewer-pw")}, http.StatusCreated)
	if status, _ := inst.login(t, "viewer", "viewer-pw").do(http.MethodGet, apiPath+"/environments", nil); status != http.StatusForbidden {
		t.Errorf("a non-admin listing environments got %d, want 403", status)
	}
}

// appSpec is an application of two versions of the test busybox, v1 with
// 75 % and v2 with 25 % of 4 replicas; v2 runs v2cmd.
func appSpec(v2cmd string, timeout int) map[string]any {
	dep := func(version, cmd string, percent float64) map[string]any {
		return map[string]any{"version": version, "image": testbed.BusyboxImage, "imagePullPolicy": "Never", "percent": percent,
			"command": []string{"sh", "-c", cmd}, "env": []map[string]string{{"name": "GREETING", "value": "hello; $USER"}},
			"ports": []map[string]any{{"name": "http", "port": 8080}}}
	}
	spec := map[string]any{"version": "v2", "replicas": 4, "deployments": []map[string]any{dep("v1", "sleep 3600", 75), dep("v2", v2cmd, 25)}}
	if timeout > 0 {
		spec["installTimeoutSeconds"] = timeout
	}
	return spec
}

// waitApp waits (bounded) for the instance at path to reach phase.
func waitApp(t *testing.T, admin *client, path, phase string, d time.Duration) map[string]any {
	t.Helper()
	var last map[string]any
	eventually(t, d, path+" "+phase, func() (bool, string) {
		_, last = admin.do(http.MethodGet, path, nil)
		return str(last["phase"]) == phase, str(last["phase"]) + ": " + str(last["message"]) + " " + str(last["progress"])
	})
	return last
}

// checkLevels compares a status with the overall level and, per version,
// {level, desired, percent}.
func checkLevels(t *testing.T, what string, st map[string]any, level float64, versions map[string][3]float64) {
	t.Helper()
	if got := st["healthy"].(map[string]any)["level"].(float64); got != level {
		t.Errorf("%s: level %v, want %v (%s)", what, got, level, mustJSON(t, st))
	}
	vs, _ := st["versions"].([]any)
	if len(vs) != len(versions) {
		t.Fatalf("%s: %d versions, want %d (%s)", what, len(vs), len(versions), mustJSON(t, st))
	}
	for _, v := range vs {
		vm := v.(map[string]any)
		want := versions[str(vm["version"])]
		got := [3]float64{vm["healthy"].(map[string]any)["level"].(float64), vm["desired"].(float64), vm["percent"].(float64)}
		if got != want {
			t.Errorf("%s: version %s has {level, desired, percent} %v, want %v", what, vm["version"], got, want)
		}
	}
}

// checkNodeReason fails unless version's not-ready node says why.
func checkNodeReason(t *testing.T, st map[string]any, version string) {
	t.Helper()
	for _, v := range st["versions"].([]any) {
		vm := v.(map[string]any)
		if str(vm["version"]) != version {
			continue
		}
		for _, n := range vm["nodes"].([]any) {
			nm := n.(map[string]any)
			if nm["healthy"].(map[string]any)["level"].(float64) < 100 && str(nm["reason"]) != "" && strings.HasPrefix(str(nm["node"]), "host") {
				t.Logf("version %s on node %s: %s", version, nm["node"], nm["reason"])
				return
			}
		}
	}
	t.Errorf("version %s has no node below level 100 with a reason: %s", version, mustJSON(t, st))
}

// countContainers counts singlecloud's application containers on hosts.
func countContainers(t *testing.T, hosts []*testbed.Host) int {
	t.Helper()
	n := 0
	for _, h := range hosts {
		out, err := h.Exec(context.Background(), "docker", "ps", "-aq", "--filter", "label=io.singlecloud.managed-by=singlecloud")
		if err != nil {
			t.Fatalf("docker ps on %s: %v", h.Name, err)
		}
		n += len(strings.Fields(out))
	}
	return n
}

// startBystander runs a Deployment singlecloud does not own, labelled with
// the application's name: uninstall must leave it.
func startBystander(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	one := int32(1)
	labels := map[string]string{"app.singlecloud.io/name": "web", "role": "bystander"}
	pod := busyboxPod("bystander", corev1.RestartPolicyAlways, "sleep", "3600")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: "default", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec}},
	}
	if _, err := kube.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(fmt.Errorf("bystander deployment: %w", err))
	}
	return d.Name
}

// followAppLog reads an application instance's live log until the server
// closes it (once the instance settles) or d passes.
func followAppLog(t *testing.T, c *client, env, app string, d time.Duration) ([]map[string]any, int) {
	t.Helper()
	u := strings.Replace(c.base, "http://", "ws://", 1) + "/apis/ws.zcloud.cn/v1/environments/" + env + "/applications/" + app + "/log?token=" + url.QueryEscape(c.token)
	dialer := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.Dial(u, nil)
	if err != nil {
		t.Fatalf("application log websocket: %v (%v)", err, resp)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var lines []map[string]any
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return lines, ce.Code
			}
			if ctx.Err() != nil {
				t.Fatalf("the log of %s/%s did not end within %s; last lines %v", env, app, d, tail(lines, 3))
			}
			return lines, -1
		}
		var l map[string]any
		if err := json.Unmarshal(msg, &l); err != nil {
			t.Fatalf("log line %s: %v", msg, err)
		}
		lines = append(lines, l)
	}
}
