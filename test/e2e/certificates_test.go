package e2e

import (
	"context"
	"crypto/tls"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// checkCertificateCalendar checks the certificate calendar of a freshly
// created cluster: every certificate zke issued and the handed-out
// kubeconfig's, with subjects, SANs and expiry, through the cluster and
// the fleet endpoints; no warning a year before expiry.
func checkCertificateCalendar(t *testing.T, admin *client, cluster string, cp *testbed.Host) {
	t.Helper()
	body := admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/certificates", nil, http.StatusOK)
	data, _ := body["data"].([]any)
	byID := map[string]map[string]any{}
	for _, d := range data {
		c, _ := d.(map[string]any)
		byID[str(c["certificateId"])] = c
	}
	api := byID["kube-apiserver/"+cp.Name]
	if api == nil {
		t.Fatalf("no kube-apiserver certificate for %s among %d: %v", cp.Name, len(data), body)
	}
	sans, _ := api["sans"].([]any)
	if !slices.Contains(sans, any(cp.Address)) {
		t.Errorf("the apiserver certificate's SANs %v lack %s", sans, cp.Address)
	}
	if d, _ := api["daysLeft"].(float64); d < 363 || d > 365 || api["ca"] != false {
		t.Errorf("apiserver certificate %v: want a leaf with about a year left", api)
	}
	if ca := byID["kube-ca"]; ca == nil || ca["ca"] != true || ca["daysLeft"].(float64) < 3640 {
		t.Errorf("cluster CA %v: want a CA with about ten years left", ca)
	}
	if byID["kubeconfig/admin"] == nil {
		t.Error("the handed-out admin kubeconfig's certificate is not listed")
	}
	if sa := byID[serviceAccountKey]; sa == nil || sa["ageDays"] != float64(0) || sa["kind"] != "service-account-key" {
		t.Errorf("the service-account key of a new cluster is listed as %v, want its age (0 days)", sa)
	}
	for _, c := range data {
		if e := str(c.(map[string]any)["error"]); e != "" {
			t.Errorf("a certificate could not be read: %v", c)
		}
	}
	fleet := admin.mustDo(http.MethodGet, apiPath+"/certificates?expiringWithin=400d", nil, http.StatusOK)
	if got, _ := fleet["data"].([]any); len(got) == 0 {
		t.Error("the fleet calendar within 400 days lists nothing")
	}
	soon := admin.mustDo(http.MethodGet, apiPath+"/certificates?expiringWithin=30d", nil, http.StatusOK)
	if got, _ := soon["data"].([]any); len(got) != 0 {
		t.Errorf("certificates expiring within 30 days of a new cluster: %v", got)
	}
	status, resp := admin.do(http.MethodGet, apiPath+"/certificates?expiringWithin=soon", nil)
	expectError(t, "a bad expiringWithin", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "expiringWithin")
	if _, c := admin.cluster(cluster); c["certificateWarning"] != nil {
		t.Errorf("a new cluster carries a certificate warning: %v", c["certificateWarning"])
	}
}

// serviceAccountKey is the calendar's id of the service-account signing
// key: listed for its age, never rotated (every token would be invalid).
const serviceAccountKey = "kube-service-account"

// certNotBefores maps each certificate of the cluster to its notBefore.
func certNotBefores(t *testing.T, admin *client, cluster string) (map[string]string, map[string]bool) {
	t.Helper()
	body := admin.mustDo(http.MethodGet, apiPath+"/clusters/"+cluster+"/certificates", nil, http.StatusOK)
	data, _ := body["data"].([]any)
	out, isCA := map[string]string{}, map[string]bool{}
	for _, d := range data {
		c, _ := d.(map[string]any)
		id := str(c["certificateId"])
		out[id] = str(c["notBefore"])
		isCA[id] = c["ca"] == true
	}
	return out, isCA
}

// rotateCertificates rotates a Running created cluster's leaf
// certificates and checks that every leaf was reissued, every CA kept,
// etcd kept its members, the old admin kubeconfig is refused and the API
// answers with the new one.
func rotateCertificates(t *testing.T, admin *client, cluster string, etcdHost *testbed.Host, etcdMembers ...string) {
	t.Helper()
	before, isCA := certNotBefores(t, admin, cluster)
	oldKC := admin.kubeconfig(cluster)
	body := admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=rotateCertificates", nil, http.StatusOK)
	if body["status"] != "Updating" {
		t.Fatalf("rotate answered %v", body["status"])
	}
	frames, _ := admin.followZkelog(t, cluster, 0, 10*time.Minute, nil)
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the rotation ended %+v", last)
	}
	after, _ := certNotBefores(t, admin, cluster)
	for id, nb := range before {
		switch {
		case strings.HasPrefix(id, "kubeconfig/"):
		case id == serviceAccountKey && after[id] != nb:
			t.Errorf("the service-account key changed (%s → %s): every token would be invalid", nb, after[id])
		case id == serviceAccountKey:
		case isCA[id] && after[id] != nb:
			t.Errorf("CA %s changed (%s → %s)", id, nb, after[id])
		case !isCA[id] && after[id] == nb:
			t.Errorf("leaf %s was not reissued (notBefore %s)", id, nb)
		}
	}
	checkEtcdMembers(t, etcdHost, etcdMembers...)
	oldRefused(t, oldKC, "leaf rotation")
	nodes, err := kubeClient(t, admin.kubeconfig(cluster)).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("the API with the new admin kubeconfig: %v", err)
	}
}

// apiWatch polls a cluster's API through its endpoint while a rotation
// runs: anonymously (GET /readyz, which RBAC opens to everyone) for the
// longest stretch without an answer, and with the admin kubeconfig handed
// out before the rotation, to see it keep working until the old CAs are
// dropped.
type apiWatch struct {
	mu          sync.Mutex
	outage      time.Duration // the longest stretch without an answer
	outageStep  string        // the step it began in
	down        time.Time     // when the current stretch began; zero when up
	downStep    string
	phase       string // the rotation step being run, from the zkelog
	oldOKInStep map[string]bool
}

// watchAPI starts an apiWatch of endpoint (host:port) with the old admin
// kubeconfig; stop ends it and returns it.
func watchAPI(t *testing.T, endpoint string, oldKubeconfig []byte) (w *apiWatch, stop func() *apiWatch) {
	t.Helper()
	w = &apiWatch{oldOKInStep: map[string]bool{}}
	old := kubeClient(t, oldKubeconfig)
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		// Availability only: which CA the endpoint's certificate comes
		// from is checked through the kubeconfigs.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			now := time.Now()
			resp, err := hc.Get("https://" + endpoint + "/readyz")
			up := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				resp.Body.Close()
			}
			lctx, lcancel := context.WithTimeout(ctx, 3*time.Second)
			_, oldErr := old.CoreV1().Namespaces().List(lctx, metav1.ListOptions{Limit: 1})
			lcancel()
			w.mu.Lock()
			switch {
			case up && !w.down.IsZero():
				if d := now.Sub(w.down); d > w.outage {
					w.outage, w.outageStep = d, w.downStep
				}
				w.down = time.Time{}
			case !up && w.down.IsZero():
				w.down, w.downStep = now, w.phase
			}
			if oldErr == nil {
				w.oldOKInStep[w.phase] = true
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w, func() *apiWatch {
		cancel()
		<-done
		w.mu.Lock()
		defer w.mu.Unlock()
		if d := time.Since(w.down); !w.down.IsZero() && d > w.outage {
			w.outage, w.outageStep = d, w.downStep
		}
		return w
	}
}

// step records the rotation step the zkelog reports.
func (w *apiWatch) step(f zkelogFrame) {
	if f.Type == "progress" && f.Step != "" {
		w.mu.Lock()
		w.phase = f.Step
		w.mu.Unlock()
	}
}

// rotateWatched rotates the certificates of a Running created cluster
// whose API is reached at endpoint, the CAs too when ca, and checks: the
// API answers throughout, the admin kubeconfig from before works while
// the leaves roll out (until the old CAs are dropped) and is refused
// after, the new one works, every leaf (and with ca every CA) was
// replaced, and etcd kept its members. A CA rotation is cancelled in its
// reissue phase and retried.
func rotateWatched(t *testing.T, admin *client, cluster, endpoint string, ca bool, etcdHost *testbed.Host, etcdMembers ...string) {
	t.Helper()
	what, midRoll := "leaf rotation", "restart"
	if ca {
		what, midRoll = "CA rotation", "reissue"
	}
	before, isCA := certNotBefores(t, admin, cluster)
	oldKC := admin.kubeconfig(cluster)
	w, stop := watchAPI(t, endpoint, oldKC)
	body := admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=rotateCertificates", map[string]bool{"ca": ca}, http.StatusOK)
	if body["status"] != "Updating" {
		t.Fatalf("%s answered %v", what, body["status"])
	}
	started := time.Now()
	canceled := false
	frames, _ := admin.followZkelog(t, cluster, 0, 20*time.Minute, func(f zkelogFrame) {
		w.step(f)
		// A CA rotation is cancelled half-way through its reissue
		// phase, some components on new leaves and some on old, and
		// then retried: it carries on in that phase.
		if ca && !canceled && f.Type == "progress" && f.Step == "reissue" && strings.Contains(f.Message, "restarted") {
			canceled = true
			admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=cancel", nil, http.StatusOK)
		}
	})
	if ca {
		if last := frames[len(frames)-1]; !canceled || last.Type != "result" || last.Status != "Unavailable" {
			logFrames(t, frames)
			t.Fatalf("the CA rotation cancelled in its reissue phase ended %+v", last)
		}
		admin.mustDo(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=retry", nil, http.StatusOK)
		frames, _ = admin.followZkelog(t, cluster, 0, 20*time.Minute, w.step)
		if !slices.ContainsFunc(frames, func(f zkelogFrame) bool {
			return f.Step == "trust-ca" && strings.Contains(f.Message, "done by an earlier run")
		}) {
			t.Error("the retried CA rotation did not pass over its finished trust-ca phase")
		}
	}
	stop()
	if last := frames[len(frames)-1]; last.Type != "result" || last.Status != "Running" {
		logFrames(t, frames)
		t.Fatalf("the %s ended %+v", what, last)
	}
	t.Logf("%s of %s: %s; longest stretch without an API answer: %s (in step %q)", what, cluster, time.Since(started).Round(time.Second), w.outage.Round(100*time.Millisecond), w.outageStep)
	if w.outage > 30*time.Second {
		t.Errorf("the API did not answer for %s during the %s", w.outage.Round(time.Second), what)
	}
	if !w.oldOKInStep[midRoll] {
		t.Errorf("the admin kubeconfig from before the %s did not work during its %s step (worked in steps %v)", what, midRoll, w.oldOKInStep)
	}
	oldRefused(t, oldKC, what)
	answers(t, kubeClient(t, admin.kubeconfig(cluster)), "with the new admin kubeconfig after the "+what)
	after, _ := certNotBefores(t, admin, cluster)
	for id, nb := range before {
		if id == serviceAccountKey {
			if after[id] != nb {
				t.Errorf("the service-account key changed in the %s (%s → %s): every token would be invalid", what, nb, after[id])
			}
			continue
		}
		if after[id] == nb && (ca || !isCA[id]) {
			t.Errorf("%s was not replaced by the %s (notBefore %s)", id, what, nb)
		}
	}
	for id := range after {
		if strings.Contains(id, "@") {
			t.Errorf("%s is still listed after the %s", id, what)
		}
	}
	checkEtcdMembers(t, etcdHost, etcdMembers...)
}

// oldRefused checks that the admin kubeconfig handed out before a
// rotation is refused (bounded: the API servers' RBAC caches follow the
// binding within seconds).
func oldRefused(t *testing.T, oldKC []byte, what string) {
	t.Helper()
	old := kubeClient(t, oldKC)
	eventually(t, 30*time.Second, "the admin kubeconfig from before the "+what+" refused", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := old.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err == nil {
			return false, "it still lists namespaces"
		}
		t.Logf("the admin kubeconfig from before the %s is refused: %v", what, err)
		return true, ""
	})
}
