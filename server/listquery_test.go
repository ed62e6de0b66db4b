package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// fakeClusters is a ClusterService whose clusters the test sets directly;
// only List and Get are implemented.
type fakeClusters struct {
	ClusterService // nil: any other method panics
	mu             sync.Mutex
	m              map[string]clustermanager.Cluster
	lists          int
}

func newFakeClusters() *fakeClusters { return &fakeClusters{m: map[string]clustermanager.Cluster{}} }

func (f *fakeClusters) List(onlyReady bool) []clustermanager.Cluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	out := make([]clustermanager.Cluster, 0, len(f.m))
	for _, c := range f.m {
		if !onlyReady || c.Status.Ready() {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (f *fakeClusters) Get(name string) (clustermanager.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.m[name]
	if !ok {
		return c, clustermanager.ErrNotFound
	}
	return c, nil
}

var fakeStates = []fsm.State{fsm.StateRunning, fsm.StateConnecting, fsm.StateUnavailable, fsm.StateUnreachable, fsm.StateCreating}

// add puts a cluster named name; its status and creation time follow i,
// and creation times repeat so that the name must break ties.
func (f *fakeClusters) add(name string, i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[name] = clustermanager.Cluster{
		Name: name, Kind: clustermanager.KindImported, Status: fakeStates[i%len(fakeStates)],
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i%7) * time.Hour),
		Revision:  1, NodeCount: i,
	}
}

func (f *fakeClusters) remove(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, name)
}

func (f *fakeClusters) update(name string, edit func(*clustermanager.Cluster)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.m[name]
	edit(&c)
	f.m[name] = c
}

func withFakeClusters(f *fakeClusters) func(*Options) {
	return func(o *Options) { o.Clusters = f }
}

// listBody is a decoded GET /clusters answer.
type listBody struct {
	Type         string            `json:"type"`
	ResourceType string            `json:"resourceType"`
	Links        map[string]string `json:"links"`
	Continue     string            `json:"continue"`
	Total        *int              `json:"total"`
	Data         []struct {
		Name              string `json:"name"`
		Status            string `json:"status"`
		CreationTimestamp string `json:"creationTimestamp"`
	} `json:"data"`
}

func (a *testAPI) list(token, query string) listBody {
	a.t.Helper()
	r := a.do(http.MethodGet, apiPrefix+"/clusters"+query, token, nil)
	if r.Status != http.StatusOK {
		a.t.Fatalf("GET /clusters%s: %d %s", query, r.Status, r.Body)
	}
	var b listBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		a.t.Fatalf("GET /clusters%s: %v: %s", query, err, r.Body)
	}
	return b
}

func (b listBody) names() []string {
	out := make([]string, len(b.Data))
	for i, d := range b.Data {
		out[i] = d.Name
	}
	return out
}

func TestListBadParameters(t *testing.T) {
	f := newFakeClusters()
	f.add("a", 0)
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()
	nameToken := api.list(admin, "?limit=1&sort=name").Continue // "a" is the only one: no next page
	if nameToken != "" {
		t.Fatalf("a one-item list has a continue token %q", nameToken)
	}
	f.add("b", 1)
	nameToken = api.list(admin, "?limit=1").Continue
	if nameToken == "" {
		t.Fatal("no continue token with one more cluster than the limit")
	}
	for _, tt := range []struct{ query, param string }{
		{"limit=0", "limit"},
		{"limit=501", "limit"},
		{"limit=-3", "limit"},
		{"limit=ten", "limit"},
		{"limit=1.5", "limit"},
		{"sort=size", "sort"},
		{"sort=Name", "sort"},
		{"continue=%25%25%25", "continue"},
		{"continue=" + url.QueryEscape("eyJzIjoibmFtZSJ9"), "continue"}, // {"s":"name"}: no name
		{"continue=" + nameToken + "&sort=-name", "continue: the token was issued for sort=name"},
		{"status=Runnin", "status"},
		{"status=Running,,Creating", "status"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			wantError(t, api.do(http.MethodGet, apiPrefix+"/clusters?"+tt.query, admin, nil), http.StatusUnprocessableEntity, CodeInvalidOption, tt.param)
		})
	}
	for _, q := range []string{"limit=1", "limit=500", "sort=-createdAt", "status=running,Creating", "q=", "limit="} {
		if r := api.do(http.MethodGet, apiPrefix+"/clusters?"+q, admin, nil); r.Status != http.StatusOK {
			t.Errorf("?%s: %d %s", q, r.Status, r.Body)
		}
	}
}

// TestListSortsAndFilters checks each order and filter on one page of
// everything, and that total counts what matches.
func TestListSortsAndFilters(t *testing.T) {
	f := newFakeClusters()
	var all []clustermanager.Cluster
	for i := 0; i < 30; i++ {
		name := fmt.Sprintf("lab-%02d", i)
		if i%3 == 0 {
			name = fmt.Sprintf("prod-%02d", i)
		}
		f.add(name, i)
	}
	all = f.List(false)
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()

	want := func(keep func(clustermanager.Cluster) bool, less func(a, b clustermanager.Cluster) int) []string {
		var out []clustermanager.Cluster
		for _, c := range all {
			if keep(c) {
				out = append(out, c)
			}
		}
		slices.SortStableFunc(out, less)
		names := make([]string, len(out))
		for i, c := range out {
			names[i] = c.Name
		}
		return names
	}
	any := func(clustermanager.Cluster) bool { return true }
	byName := func(a, b clustermanager.Cluster) int { return strings.Compare(a.Name, b.Name) }
	then := func(first func(a, b clustermanager.Cluster) int) func(a, b clustermanager.Cluster) int {
		return func(a, b clustermanager.Cluster) int {
			if c := first(a, b); c != 0 {
				return c
			}
			return byName(a, b)
		}
	}
	for _, tt := range []struct {
		query string
		want  []string
	}{
		{"sort=name", want(any, byName)},
		{"sort=-name", want(any, func(a, b clustermanager.Cluster) int { return byName(b, a) })},
		{"sort=status", want(any, then(func(a, b clustermanager.Cluster) int { return strings.Compare(string(a.Status), string(b.Status)) }))},
		{"sort=-status", want(any, then(func(a, b clustermanager.Cluster) int { return strings.Compare(string(b.Status), string(a.Status)) }))},
		{"sort=createdAt", want(any, then(func(a, b clustermanager.Cluster) int { return a.CreatedAt.Compare(b.CreatedAt) }))},
		{"sort=-createdAt", want(any, then(func(a, b clustermanager.Cluster) int { return b.CreatedAt.Compare(a.CreatedAt) }))},
		{"q=PROD", want(func(c clustermanager.Cluster) bool { return strings.HasPrefix(c.Name, "prod") }, byName)},
		{"q=b-1", want(func(c clustermanager.Cluster) bool { return strings.Contains(c.Name, "b-1") }, byName)},
		{"q=nothing", nil},
		{"status=Running", want(func(c clustermanager.Cluster) bool { return c.Status == fsm.StateRunning }, byName)},
		{"status=Running,unavailable", want(func(c clustermanager.Cluster) bool {
			return c.Status == fsm.StateRunning || c.Status == fsm.StateUnavailable
		}, byName)},
		{"status=Connecting&q=prod&sort=-name", want(func(c clustermanager.Cluster) bool {
			return c.Status == fsm.StateConnecting && strings.HasPrefix(c.Name, "prod")
		}, func(a, b clustermanager.Cluster) int { return byName(b, a) })},
		{"status=Deleting", nil},
	} {
		t.Run(tt.query, func(t *testing.T) {
			b := api.list(admin, "?limit=500&"+tt.query)
			if got := b.names(); !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Errorf("order\n got %v\nwant %v", got, tt.want)
			}
			if b.Total == nil || *b.Total != len(tt.want) {
				t.Errorf("total = %v, want %d", b.Total, len(tt.want))
			}
			if b.Continue != "" {
				t.Errorf("continue = %q on the only page", b.Continue)
			}
			if b.Data == nil {
				t.Errorf("data is null")
			}
		})
	}
}

// TestListPagesWhileClustersChange walks every order page by page while
// clusters are added and deleted between pages: each cluster that exists
// throughout appears exactly once, none twice, in order.
func TestListPagesWhileClustersChange(t *testing.T) {
	for _, sortBy := range listSorts() {
		for _, limit := range []int{1, 3, 7} {
			t.Run(fmt.Sprintf("%s/limit=%d", sortBy, limit), func(t *testing.T) {
				f := newFakeClusters()
				for i := 0; i < 40; i++ {
					f.add(fmt.Sprintf("c%03d", i*2), i) // even numbers: the odd ones are added between pages
				}
				api := newTestAPI(t, withFakeClusters(f))
				admin := api.adminToken()
				stay := map[string]bool{}
				for _, c := range f.List(false) {
					stay[c.Name] = true
				}
				seen := map[string]bool{}
				var walked []listBody
				token, page := "", 0
				for {
					q := url.Values{"limit": {fmt.Sprint(limit)}, "sort": {sortBy}}
					if token != "" {
						q.Set("continue", token)
					}
					b := api.list(admin, "?"+q.Encode())
					walked = append(walked, b)
					if len(b.Data) > limit {
						t.Fatalf("page %d has %d items, limit %d", page, len(b.Data), limit)
					}
					for _, d := range b.Data {
						if seen[d.Name] {
							t.Fatalf("page %d repeats %s", page, d.Name)
						}
						seen[d.Name] = true
					}
					if b.Continue == "" {
						break
					}
					token = b.Continue
					page++
					if page > 200 {
						t.Fatal("the walk does not end")
					}
					// Between pages: add one cluster, delete one that
					// was not meant to stay, and one that was (which
					// then no longer has to appear).
					f.add(fmt.Sprintf("c%03d.%03d", (page*13)%80, page), page) // a new name each time
					if page%4 == 0 {
						n := fmt.Sprintf("c%03d", (page*17)%80&^1)
						f.remove(n)
						delete(stay, n)
					}
				}
				for n := range stay {
					if !seen[n] {
						t.Errorf("%s, present throughout, was never listed", n)
					}
				}
				// Within the walk, each item follows the one before in
				// the order (keys never change here).
				var prev *sortKey
				for _, b := range walked {
					for _, d := range b.Data {
						created, _ := time.Parse(time.RFC3339, d.CreationTimestamp)
						k := sortKey{status: d.Status, created: created, name: d.Name}
						if prev != nil && compareKeys(sortBy, *prev, k) >= 0 {
							t.Fatalf("%s comes after %s in sort=%s", d.Name, prev.name, sortBy)
						}
						prev = &k
					}
				}
			})
		}
	}
}

// TestListWithoutParametersIsUnchanged checks that no parameter answers
// the whole list exactly as before (the bare envelope, no total), and that
// the admin's body is reused until a cluster changes.
func TestListWithoutParametersIsUnchanged(t *testing.T) {
	f := newFakeClusters()
	for i := 0; i < 20; i++ {
		f.add(fmt.Sprintf("c%02d", i), i)
	}
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()
	oldBody := func() []byte {
		var items [][]byte
		for _, c := range f.List(false) {
			js, err := json.Marshal(toClusterResource(c, true))
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, js)
		}
		body, err := assembleCollection("cluster", apiPrefix+"/clusters", items, nil)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	r := api.do(http.MethodGet, apiPrefix+"/clusters", admin, nil)
	if r.Status != http.StatusOK || !bytes.Equal(r.Body, oldBody()) {
		t.Fatalf("GET /clusters = %d\n%s\nwant\n%s", r.Status, r.Body, oldBody())
	}
	if strings.Contains(string(r.Body), `"total"`) || strings.Contains(string(r.Body), `"continue"`) {
		t.Errorf("the unparameterised list has paging fields: %.200s", r.Body)
	}
	first := api.Server.clusters.full.Load()
	api.do(http.MethodGet, apiPrefix+"/clusters", admin, nil)
	if api.Server.clusters.full.Load() != first {
		t.Error("the whole list was assembled again although nothing changed")
	}
	// A change of revision, of status, a new and a removed cluster each
	// show in the next answer.
	for i, change := range []func(){
		func() { f.update("c03", func(c *clustermanager.Cluster) { c.Revision++; c.NodeCount = 99 }) },
		func() { f.update("c04", func(c *clustermanager.Cluster) { c.Status = fsm.StateDeleting }) },
		func() { f.add("c99", 1) },
		func() { f.remove("c00") },
	} {
		change()
		r := api.do(http.MethodGet, apiPrefix+"/clusters", admin, nil)
		if !bytes.Equal(r.Body, oldBody()) {
			t.Errorf("change %d: the list does not show it:\n%s", i, r.Body)
		}
	}
}

// rawGet sends a GET with the given Accept-Encoding and returns the
// response as sent (no transparent decompression).
func (a *testAPI) rawGet(path, token, acceptEncoding string) response {
	a.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

func TestListGzip(t *testing.T) {
	f := newFakeClusters()
	for i := 0; i < 50; i++ {
		f.add(fmt.Sprintf("c%02d", i), i)
	}
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()
	for _, tt := range []struct {
		name, query, accept string
		gzipped             bool
	}{
		{"whole list", "", "gzip", true},
		{"whole list again (cached)", "", "gzip, deflate, br", true},
		{"whole list without gzip", "", "", false},
		{"gzip refused", "", "gzip;q=0, identity", false},
		{"any coding", "", "*", true},
		{"page", "?limit=20&sort=-createdAt", "deflate, gzip;q=0.5", true},
		{"small page", "?limit=1", "gzip", false}, // under minGzipSize
		{"onlyready", "?onlyready=true", "x-gzip", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := api.rawGet(apiPrefix+"/clusters"+tt.query, admin, "identity")
			r := api.rawGet(apiPrefix+"/clusters"+tt.query, admin, tt.accept)
			if r.Status != http.StatusOK || plain.Status != http.StatusOK {
				t.Fatalf("status %d / %d: %s", r.Status, plain.Status, r.Body)
			}
			if v := r.Header.Values("Vary"); !slices.Contains(v, "Accept-Encoding") {
				t.Errorf("Vary = %v", v)
			}
			if plain.Header.Get("Content-Encoding") != "" {
				t.Errorf("identity answer has Content-Encoding %q", plain.Header.Get("Content-Encoding"))
			}
			body := r.Body
			if got := r.Header.Get("Content-Encoding") == "gzip"; got != tt.gzipped {
				t.Fatalf("gzipped = %v, want %v (body %d bytes)", got, tt.gzipped, len(plain.Body))
			}
			if tt.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(r.Body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
				if len(r.Body)*3 > len(body) {
					t.Errorf("gzip: %d bytes for %d", len(r.Body), len(body))
				}
			}
			if !bytes.Equal(body, plain.Body) {
				t.Errorf("round trip differs:\n%s\n%s", body, plain.Body)
			}
			if r.Header.Get("Content-Length") != fmt.Sprint(len(r.Body)) {
				t.Errorf("Content-Length %q for %d bytes", r.Header.Get("Content-Length"), len(r.Body))
			}
		})
	}
	// The default Go client asks for gzip and undoes it.
	if b := api.list(admin, ""); len(b.Data) != 50 {
		t.Errorf("transparent gzip: %d items", len(b.Data))
	}
}

func TestListNonAdminSeesGrantedClustersOnly(t *testing.T) {
	f := newFakeClusters()
	for i := 0; i < 12; i++ {
		f.add(fmt.Sprintf("c%02d", i), i)
	}
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()
	granted := []string{"c01", "c04", "c05", "c09", "c11"}
	var projects []auth.Project
	for _, n := range granted {
		projects = append(projects, auth.Project{Cluster: n})
	}
	user := api.createUser("dev", "dev-password", projects...)

	if got := api.list(user, "").names(); !slices.Equal(got, granted) {
		t.Errorf("whole list = %v, want %v", got, granted)
	}
	var walked []string
	token := ""
	for {
		q := "?limit=2"
		if token != "" {
			q += "&continue=" + token
		}
		b := api.list(user, q)
		if b.Total == nil || *b.Total != len(granted) {
			t.Fatalf("total = %v, want %d (the granted clusters only)", b.Total, len(granted))
		}
		walked = append(walked, b.names()...)
		if token = b.Continue; token == "" {
			break
		}
	}
	if !slices.Equal(walked, granted) {
		t.Errorf("paged = %v, want %v", walked, granted)
	}
	if b := api.list(user, "?q=c0&status=Running,Connecting,Unavailable,Unreachable,Creating"); *b.Total != 4 {
		t.Errorf("filtered total = %d (%v), want 4", *b.Total, b.names())
	}
	r := api.do(http.MethodGet, apiPrefix+"/clusters", user, nil)
	if strings.Contains(string(r.Body), `"update"`) || strings.Contains(string(r.Body), "c00") {
		t.Errorf("the non-admin's list shows admin links or ungranted clusters: %.300s", r.Body)
	}
	if n := len(api.list(admin, "").Data); n != 12 {
		t.Errorf("admin sees %d clusters after the user's list, want 12", n)
	}
}

// TestListConcurrentWithChanges lists from several clients while clusters
// change: every answer is a whole, well-formed list (run with -race).
func TestListConcurrentWithChanges(t *testing.T) {
	f := newFakeClusters()
	for i := 0; i < 200; i++ {
		f.add(fmt.Sprintf("c%03d", i), i)
	}
	api := newTestAPI(t, withFakeClusters(f))
	admin := api.adminToken()
	stop := make(chan struct{})
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f.update(fmt.Sprintf("c%03d", i%200), func(c *clustermanager.Cluster) { c.Revision++; c.NodeCount = i })
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				accept := []string{"gzip", "identity"}[i%2]
				r := api.rawGet(apiPrefix+"/clusters", admin, accept)
				body := r.Body
				if r.Header.Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Error(err)
						return
					}
					body, _ = io.ReadAll(zr)
				}
				var b listBody
				if err := json.Unmarshal(body, &b); err != nil || len(b.Data) != 200 {
					t.Errorf("answer %d: %v, %d items", i, err, len(b.Data))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-changed
}
