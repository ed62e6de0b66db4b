package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
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
// etcd kept its members and the API answers with the new admin
// kubeconfig.
func rotateCertificates(t *testing.T, admin *client, cluster string, etcdHost *testbed.Host, etcdMembers ...string) {
	t.Helper()
	before, isCA := certNotBefores(t, admin, cluster)
	status, resp := admin.do(http.MethodPost, apiPath+"/clusters/"+cluster+"?action=rotateCertificates", map[string]bool{"ca": true})
	expectError(t, "CA rotation", status, resp, http.StatusUnprocessableEntity, "InvalidOption", "ca")
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
		case isCA[id] && after[id] != nb:
			t.Errorf("CA %s changed (%s → %s)", id, nb, after[id])
		case !isCA[id] && after[id] == nb:
			t.Errorf("leaf %s was not reissued (notBefore %s)", id, nb)
		}
	}
	checkEtcdMembers(t, etcdHost, etcdMembers...)
	nodes, err := kubeClient(t, admin.kubeconfig(cluster)).CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("the API with the new admin kubeconfig: %v", err)
	}
}
