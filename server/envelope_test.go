package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

func TestDecodeBody(t *testing.T) {
	const limit = 512
	api := newTestAPI(t, func(o *Options) { o.MaxBodyBytes = limit })
	admin := api.adminToken()
	digest := auth.PasswordDigest("pw")
	tests := []struct {
		name      string
		body      string
		fragments []string
	}{
		{"unknown field", `{"name":"x","password":"` + digest + `","foo":1}`, []string{`unknown field "foo"`}},
		{"unknown nested field", `{"name":"x","password":"` + digest + `","projects":[{"cluster":"c","zone":"z"}]}`, []string{`unknown field "zone"`}},
		{"empty", ``, []string{"empty"}},
		{"malformed", `{"name":`, []string{"not valid JSON"}},
		{"syntax error", `{"name" "x"}`, []string{"not valid JSON at byte"}},
		{"wrong type", `{"name":"x","projects":"c1"}`, []string{`field "projects" must be a JSON array, not string`}},
		{"wrong nested type", `{"name":"x","projects":[{"cluster":7}]}`, []string{`"projects.cluster" must be a JSON string, not number`}},
		{"not an object", `["x"]`, []string{"must be a JSON object, not array"}},
		{"trailing data", `{"name":"x","password":"` + digest + `"} {}`, []string{"more than one JSON value"}},
		{"trailing garbage", `{"name":"x","password":"` + digest + `"} x`, []string{"not valid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := api.do(http.MethodPost, apiPrefix+"/users", admin, tt.body)
			wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidBodyContent, tt.fragments...)
		})
	}
	// A long unknown field name is named by its start only.
	long := strings.Repeat("z", 300)
	r := api.do(http.MethodPost, apiPrefix+"/users", admin, `{"`+long+`":1}`)
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidBodyContent, `unknown field "zzz`, "…")
	if strings.Contains(string(r.Body), strings.Repeat("z", maxEchoedLen+1)) {
		t.Fatalf("the error repeats the whole %d-character field name: %s", len(long), r.Body)
	}
	// An oversized body is 413, naming the limit.
	r = api.do(http.MethodPost, apiPrefix+"/users", admin, `{"name":"`+strings.Repeat("a", 2*limit)+`"}`)
	wantError(t, r, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "exceeds the limit of 512 bytes")
	if users, err := api.Users.List(); err != nil || len(users) != 1 {
		t.Fatalf("bad bodies changed the users: %+v, %v", users, err)
	}
	// A body just under the limit is fine.
	ok := `{"name":"x","password":"` + digest + `"}`
	ok += strings.Repeat(" ", limit-len(ok)-1)
	if r := api.do(http.MethodPost, apiPrefix+"/users", admin, ok); r.Status != http.StatusCreated {
		t.Fatalf("body under the limit: %d %s", r.Status, r.Body)
	}
}

func TestWriteCollectionNeverNull(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = writeCollection(w, "thing", apiPrefix+"/things", nil)
	}))
	defer hs.Close()
	api := &testAPI{t: t, URL: hs.URL}
	r := api.do(http.MethodGet, "/", "", nil)
	want := map[string]any{"type": "collection", "resourceType": "thing", "links": map[string]any{"self": apiPrefix + "/things"}, "data": []any{}}
	if got := r.JSON(t); r.Status != 200 || !jsonEqual(got, want) {
		t.Fatalf("empty collection = %d %s", r.Status, r.Body)
	}
}

func TestNewResourceBase(t *testing.T) {
	links := map[string]string{"self": "/a/x", "collection": "/a"}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", 3600))
	b := newResourceBase("x", "thing", links, at)
	if b.CreationTimestamp != "2026-03-04T04:06:07Z" || b.ID != "x" || b.Type != "thing" {
		t.Fatalf("newResourceBase = %+v", b)
	}
	if b := newResourceBase("x", "thing", links, time.Time{}); b.CreationTimestamp != "" {
		t.Fatalf("zero time rendered as %q", b.CreationTimestamp)
	}
}
