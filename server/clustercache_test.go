package server

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
)

func TestClusterCacheFollowsRevisionAndStatus(t *testing.T) {
	cc := newClusterCache()
	c := clustermanager.Cluster{Name: "a", Status: fsm.StateConnecting, Revision: 1}
	render := func(c clustermanager.Cluster) map[string]any {
		js, err := cc.render(c, false)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	steps := []struct {
		change     func(*clustermanager.Cluster)
		wantStatus string
		wantReason string
	}{
		{func(*clustermanager.Cluster) {}, "Connecting", ""},
		{func(c *clustermanager.Cluster) { c.Status = fsm.StateRunning }, "Running", ""},
		{func(c *clustermanager.Cluster) { c.Reason = "x"; c.Revision = 2 }, "Running", "x"},
		// Same revision and status: the cached rendering is served.
		{func(c *clustermanager.Cluster) { c.Reason = "not seen" }, "Running", "x"},
	}
	for i, st := range steps {
		st.change(&c)
		m := render(c)
		if m["status"] != st.wantStatus || (m["reason"] != nil && m["reason"] != st.wantReason) || (st.wantReason != "" && m["reason"] != st.wantReason) {
			t.Errorf("step %d: rendered %v, want status %s reason %q", i, m, st.wantStatus, st.wantReason)
		}
	}
	many := make([]clustermanager.Cluster, 0, 40)
	for i := 0; i < 40; i++ {
		many = append(many, clustermanager.Cluster{Name: string(rune('b' + i)), Revision: 1})
		render(many[i])
	}
	cc.prune(many[:1])
	if len(cc.m) != 1 {
		t.Errorf("after prune the cache holds %d clusters, want 1", len(cc.m))
	}
}

func TestClusterCacheRendersLinksPerCaller(t *testing.T) {
	cc := newClusterCache()
	c := clustermanager.Cluster{Name: "a", Status: fsm.StateRunning, Revision: 1,
		Actions: clustermanager.ActionSet(0).With(clustermanager.ActionUpdate, clustermanager.ActionDelete)}
	links := func(admin bool) (map[string]string, []string) {
		js, err := cc.render(c, admin)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Links   map[string]string
			Actions []string
		}
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		return m.Links, m.Actions
	}
	for round := 0; round < 2; round++ { // the second round is served from the cache
		admin, adminActions := links(true)
		user, userActions := links(false)
		if admin["update"] != apiPrefix+"/clusters/a" || admin["remove"] != apiPrefix+"/clusters/a" {
			t.Fatalf("round %d: admin links %v lack update and remove", round, admin)
		}
		if _, ok := user["update"]; ok || user["remove"] != "" || user["self"] != apiPrefix+"/clusters/a" {
			t.Fatalf("round %d: non-admin links %v", round, user)
		}
		if !slices.Equal(adminActions, []string{"update", "delete"}) || userActions == nil || len(userActions) != 0 {
			t.Fatalf("round %d: actions %v for the admin, %v for a user; want [update delete] and []", round, adminActions, userActions)
		}
	}
}

func TestWriteRawCollection(t *testing.T) {
	w := httptest.NewRecorder()
	if err := writeRawCollection(w, "cluster", "/x", [][]byte{[]byte(`{"id":"a"}`), []byte(`{"id":"b"}`)}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Type, ResourceType string
		Links              map[string]string
		Data               []map[string]string
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, w.Body)
	}
	if got.Type != "collection" || got.ResourceType != "cluster" || got.Links["self"] != "/x" || len(got.Data) != 2 || got.Data[1]["id"] != "b" {
		t.Errorf("collection: %+v", got)
	}
	w = httptest.NewRecorder()
	_ = writeRawCollection(w, "cluster", "/x", nil)
	if !strings.Contains(w.Body.String(), `"data":[]`) {
		t.Errorf("empty collection: %s", w.Body)
	}
}

func TestAdminListSharesItsBodyWithTheCache(t *testing.T) {
	cc := newClusterCache()
	all := []clustermanager.Cluster{
		{Name: "a", Status: fsm.StateRunning, Revision: 1},
		{Name: "b", Status: fsm.StateConnecting, Revision: 3},
	}
	for round := 0; round < 3; round++ {
		if round == 2 { // one cluster changes: the list is assembled again
			all[1].Status, all[1].Revision = fsm.StateRunning, 4
		}
		f, err := cc.adminList(all, cc.ticket(), "cluster", "/x")
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Data []map[string]any }
		if err := json.Unmarshal(f.body, &got); err != nil || len(got.Data) != 2 {
			t.Fatalf("round %d: body %s: %v", round, f.body, err)
		}
		for i, c := range all {
			js, err := cc.render(c, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.Data[i]["status"] != string(c.Status) {
				t.Errorf("round %d: %s listed as %v, want %s", round, c.Name, got.Data[i]["status"], c.Status)
			}
			if !strings.Contains(string(f.body), string(js)) || cap(js) != len(js) {
				t.Errorf("round %d: %s rendered %s (cap %d), not a capped part of the list", round, c.Name, js, cap(js))
			}
			if start := &f.body[0]; uintptr(unsafe.Pointer(&js[0])) < uintptr(unsafe.Pointer(start)) ||
				uintptr(unsafe.Pointer(&js[0])) >= uintptr(unsafe.Pointer(start))+uintptr(len(f.body)) {
				t.Errorf("round %d: %s's cached JSON is a copy, not a part of the list's body", round, c.Name)
			}
		}
	}
}
