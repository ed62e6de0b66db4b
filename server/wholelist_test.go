package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The admin's whole list and the pages, served without listing the views
// again while the manager's generation stays, are never behind a write:
// after each create, each state the install moves through, and each
// delete, the next GET shows it; while nothing changes, two GETs answer
// the same body.
func TestWholeListFollowsEveryChange(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	list := func(query ...string) (map[string]string, string) {
		t.Helper()
		r := api.do(http.MethodGet, apiPrefix+"/clusters"+strings.Join(query, ""), admin, nil)
		var col struct {
			Data []struct{ Name, Status string }
		}
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &col) != nil {
			t.Fatalf("GET /clusters: %d %s", r.Status, r.Body)
		}
		out := map[string]string{}
		for _, c := range col.Data {
			out[c.Name] = c.Status
		}
		return out, string(r.Body)
	}
	status := func(name string) string {
		t.Helper()
		r := api.do(http.MethodGet, apiPrefix+"/clusters/"+name, admin, nil)
		var c struct{ Status string }
		_ = json.Unmarshal(r.Body, &c)
		return c.Status
	}
	for i := range 3 {
		name := fmt.Sprint("g", i)
		if r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, clusterJSON(t, name)); r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.Status, r.Body)
		}
		// Every GET of the whole list agrees with the cluster's own GET
		// read just before it, as the install moves on.
		deadline := time.Now().Add(30 * time.Second)
		for {
			want := status(name)
			got, _ := list()
			if got[name] == "" {
				t.Fatalf("the whole list after creating %s lacks it: %v", name, got)
			}
			paged, _ := list("?limit=2&sort=-createdAt")
			if want == "Unavailable" {
				if got[name] != want || paged[name] != want {
					t.Fatalf("%s is %s; the whole list read after says %s, the newest page %s", name, want, got[name], paged[name])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %s after 30 s", name, want)
			}
		}
	}
	_, a := list()
	if _, b := list(); a != b {
		t.Error("two whole lists with nothing changed between differ")
	}
	if r := api.do(http.MethodDelete, apiPrefix+"/clusters/g1?force=true", admin, nil); r.Status/100 != 2 {
		t.Fatalf("delete g1: %d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if status("g1") == "" {
			if got, _ := list(); got["g1"] != "" {
				t.Fatalf("g1 is gone, the whole list read after still shows it: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("g1 not deleted within 30 s")
		}
	}
}
