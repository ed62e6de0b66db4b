package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestVersionShowsReplicasOnlyToTheAdmin: /version shows the build to
// anyone, and the advertise URLs of the leader and the answering replica
// only with the admin's token, whether the leader's API or a replica's
// front (checking the token on its copy of the store) answers.
func TestVersionShowsReplicasOnlyToTheAdmin(t *testing.T) {
	api := newTestAPI(t, func(o *Options) {
		o.Version = VersionInfo{Version: "v1"}
		o.Leader, o.Replica = func() string { return "http://leader.test" }, "http://leader.test"
	})
	admin, user := api.adminToken(), api.createUser("ann", "ann-pw")
	follower, err := NewFollower(FollowerOptions{Users: api.Users, Tokens: api.Tokens, Clusters: api.Server.reads,
		Bus: api.Server.opts.Bus, Self: "http://follower.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	h, err := NewReplica(ReplicaOptions{Version: VersionInfo{Version: "v1"}, Self: "http://follower.test",
		Leader: func() string { return "http://leader.test" }, Local: func() http.Handler { return nil },
		Reads: func() *Follower { return follower }, Sync: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()

	for _, base := range []struct{ name, url, replica string }{
		{"leader", api.URL, "http://leader.test"},
		{"front", front.URL, "http://follower.test"},
	} {
		for _, tt := range []struct {
			name, token string
			shown       bool
		}{
			{"no token", "", false},
			{"a bad token", "not-a-token", false},
			{"a user's token", user, false},
			{"the admin's token", admin, true},
		} {
			t.Run(base.name+"/"+tt.name, func(t *testing.T) {
				hdr := http.Header{}
				if tt.token != "" {
					hdr.Set("Authorization", "Bearer "+tt.token)
				}
				status, _, v := call(t, http.MethodGet, base.url+versionPath, hdr)
				if status != http.StatusOK || v["version"] != "v1" {
					t.Fatalf("version: %d %v", status, v)
				}
				_, hasLeader := v["leader"]
				_, hasReplica := v["replica"]
				if !tt.shown && (hasLeader || hasReplica) {
					t.Fatalf("version shows the replicas: %v", v)
				}
				if tt.shown && (v["leader"] != "http://leader.test" || v["replica"] != base.replica) {
					t.Fatalf("version for the admin: %v, want leader and replica %s", v, base.replica)
				}
				_, _, ready := call(t, http.MethodGet, base.url+readyzPath, hdr)
				if _, hasLeader := ready["leader"]; hasLeader != tt.shown || (tt.shown && ready["leader"] != "http://leader.test") {
					t.Fatalf("readyz shows the leader %v, want it shown: %v", ready, tt.shown)
				}
				if leading := ready["leading"]; leading != (base.replica == "http://leader.test") {
					t.Fatalf("readyz says leading %v on %s", leading, base.replica)
				}
			})
		}
	}
}
