package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/applications"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// noClusters is an applications.Clusters without any cluster: the
// requests of these tests are refused before an environment is looked up.
type noClusters struct{}

func (noClusters) ClusterState(string) (bool, bool) { return false, false }
func (noClusters) ReadyClusters() []string          { return nil }

// A resource limit out of range (1e19 bytes of memory reached Docker as
// --memory 0, no limit) is a 422 whose message and fields name it.
func TestApplicationResourceLimitOutOfRangeIs422(t *testing.T) {
	db := storagetest.Open(t)
	bus := pubsub.New(pubsub.Options{})
	t.Cleanup(bus.Close)
	apps, err := applications.New(applications.Options{Store: db, Bus: bus, Operators: operators.NewRegistry(nil), Clusters: noClusters{}})
	if err != nil {
		t.Fatal(err)
	}
	api := newTestAPI(t, func(o *Options) { o.Applications = apps })
	body := map[string]any{"version": "v1", "deployments": []map[string]any{{
		"version": "v1", "image": "busybox:1.36", "replicas": 1,
		"resources": map[string]any{"memoryLimit": "1e19", "cpuLimit": "8Ei"},
	}}}
	r := api.do(http.MethodPut, apiPrefix+"/environments/local/applications/web", api.adminToken(), body)
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption,
		`deployments[0].resources.cpuLimit: "8Ei" is more than 1024 CPUs`, `deployments[0].resources.memoryLimit: "1e19" is more than 1Pi`)
	fields, _ := r.JSON(t)["fields"].([]any)
	var names []string
	for _, f := range fields {
		m, _ := f.(map[string]any)
		name, _ := m["field"].(string)
		names = append(names, name)
	}
	if got := strings.Join(names, ","); got != "deployments[0].resources.cpuLimit,deployments[0].resources.memoryLimit" {
		t.Errorf("fields %s, want the two limits", got)
	}
}
