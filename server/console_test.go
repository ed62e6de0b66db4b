package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// TestConsolePathsBypassTheToken: the console's page and assets are
// served without a token by Options.Console, only for GET and HEAD; every
// other path keeps the API's answers, and without a console "/" is the
// API's 401 as before.
func TestConsolePathsBypassTheToken(t *testing.T) {
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("console " + r.URL.Path))
	})
	api := newTestAPI(t, func(o *Options) { o.Console = console })
	for _, tc := range []struct {
		method, path string
		status       int
		body         string
	}{
		{http.MethodGet, "/", http.StatusOK, "console /"},
		{http.MethodGet, "/ui/app.js", http.StatusOK, "console /ui/app.js"},
		{http.MethodHead, "/ui/style.css", http.StatusOK, ""},
		{http.MethodPost, "/", http.StatusUnauthorized, "Unauthorized"},
		{http.MethodGet, "/other", http.StatusUnauthorized, "Unauthorized"},
		{http.MethodGet, apiPrefix + "/clusters", http.StatusUnauthorized, "Unauthorized"},
		{http.MethodGet, healthzPath, http.StatusOK, "ok"},
	} {
		r := api.do(tc.method, tc.path, "", nil)
		if r.Status != tc.status || !strings.Contains(string(r.Body), tc.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, r.Status, r.Body, tc.status, tc.body)
		}
	}
	if !strings.Contains(api.Log.String(), `route=/ui/{asset}`) {
		t.Errorf("the access log has no bounded route for an asset:\n%s", api.Log.String())
	}

	bare := newTestAPI(t)
	if r := bare.do(http.MethodGet, "/", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("GET / without a console: %d, want 401", r.Status)
	}
}

// TestValidationErrorsListTheirFields: a 422 about fields lists each with
// its path and reason beside the one-line message, so that a client can put
// each beside its field even when a reason holds "; ".
func TestValidationErrorsListTheirFields(t *testing.T) {
	api := newTestAPI(t)
	admin := api.adminToken()
	body := clusterJSON(t, "Bad Name")
	body["nodes"] = []any{map[string]any{"name": "n1", "address": "10.0.0.300", "roles": []string{"controlplane", "etcd", "worker"}}}
	r := api.do(http.MethodPost, apiPrefix+"/clusters", admin, body)
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption)
	var fields []string
	for _, f := range r.JSON(t)["fields"].([]any) {
		m := f.(map[string]any)
		fields = append(fields, m["field"].(string))
		if m["reason"] == "" {
			t.Errorf("field %v has no reason", m["field"])
		}
	}
	for _, want := range []string{"name", "nodes[0].address"} {
		if !slices.Contains(fields, want) {
			t.Errorf("fields %v lack %s", fields, want)
		}
	}

	// The user store's field errors are listed too.
	r = api.do(http.MethodPost, apiPrefix+"/users", admin, map[string]any{
		"name": "ann", "password": auth.PasswordDigest("pw"), "projects": []map[string]string{{"cluster": "nosuch", "namespace": "default"}},
	})
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption)
	if f := r.JSON(t)["fields"].([]any); len(f) != 1 || f[0].(map[string]any)["field"] != "projects[0].cluster" {
		t.Errorf("user fields: %v", f)
	}

	// Other errors have no list.
	r = api.do(http.MethodGet, apiPrefix+"/clusters/none", admin, nil)
	if _, ok := r.JSON(t)["fields"]; ok || r.Status != http.StatusNotFound {
		t.Errorf("a 404 with fields: %s", r.Body)
	}
}

// TestEventsFollowTheUsersGrants: the admin gets every event; another user
// only those of the clusters granted to them when the event comes.
func TestEventsFollowTheUsersGrants(t *testing.T) {
	api := newTestAPI(t, withInstaller(t))
	admin := api.adminToken()
	api.createClusters(admin, "mine", "theirs")
	ann := api.createUser("ann", "ann-pw", auth.Project{Cluster: "mine", Namespace: "default"})
	dial := func(token string) *websocket.Conn {
		t.Helper()
		u := "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/events?token=" + url.QueryEscape(token)
		conn, resp, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial(u, nil)
		if err != nil {
			t.Fatalf("dial events: %v (%v)", err, resp)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	annConn, adminConn := dial(ann), dial(admin)
	// Their subscriptions exist once the upgrade answered; publish the
	// ungranted cluster's event first, so that ann would see it first.
	// The clusters' own operations publish too, at their pace: the
	// test's events carry the marker, and only those are looked at.
	const marker = "test event"
	bus := api.Server.opts.Bus
	publish := func(ev pubsub.Event) {
		ev.Reason, ev.Time = marker, time.Now()
		bus.Publish(ev)
	}
	publish(pubsub.Event{Kind: pubsub.ClusterStatusChanged, Cluster: "theirs"})
	publish(pubsub.Event{Kind: pubsub.ApplicationPhaseChanged, Environment: "edge"})
	// Of her cluster too, what the API shows the admin only (snapshots,
	// applications) is withheld.
	publish(pubsub.Event{Kind: pubsub.ClusterSnapshotTaken, Cluster: "mine"})
	publish(pubsub.Event{Kind: pubsub.ApplicationPhaseChanged, Cluster: "mine", Environment: "mine"})
	publish(pubsub.Event{Kind: pubsub.ClusterStatusChanged, Cluster: "mine"})
	next := func(c *websocket.Conn) pubsub.Event {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			var ev pubsub.Event
			if err := c.ReadJSON(&ev); err != nil {
				t.Fatalf("read event: %v", err)
			}
			if ev.Reason == marker {
				return ev
			}
		}
	}
	read := func(c *websocket.Conn) string {
		t.Helper()
		ev := next(c)
		return ev.Cluster + "/" + ev.Environment
	}
	if got := read(annConn); got != "mine/" {
		t.Errorf("ann's first event is of %q, want mine/", got)
	}
	// A grant taken back stops the cluster's events, but the delete of a
	// cluster she was granted (which drops the grant in its transaction,
	// before it is announced) still reaches her.
	publish(pubsub.Event{Kind: pubsub.ClusterStatusChanged, Cluster: "mine", Status: "Deleting"})
	if got := read(annConn); got != "mine/" {
		t.Errorf("ann's event of her cluster deleting is of %q", got)
	}
	if r := api.do(http.MethodPut, apiPrefix+"/users/ann", admin, map[string]any{"projects": []any{}}); r.Status != http.StatusOK {
		t.Fatalf("revoke ann's grant: %d %s", r.Status, r.Body)
	}
	publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: "theirs"})
	publish(pubsub.Event{Kind: pubsub.ClusterDeleted, Cluster: "mine"})
	if ev := next(annConn); ev.Cluster != "mine" || ev.Kind != pubsub.ClusterDeleted {
		t.Errorf("ann's event after the revoke: %+v, want only mine's ClusterDeleted", ev)
	}
	for _, want := range []string{"theirs/", "/edge", "mine/", "mine/mine", "mine/"} {
		if got := read(adminConn); got != want {
			t.Errorf("admin's event %q, want %q", got, want)
		}
	}
}
