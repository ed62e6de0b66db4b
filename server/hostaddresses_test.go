package server

import (
	"net/http"
	"testing"

	"github.com/zdnscloud/singlecloud/hosts"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// newHostsAPI serves a real host manager (not running: nothing is probed)
// with policy.
func newHostsAPI(t *testing.T, policy validation.AddressPolicy) *testAPI {
	t.Helper()
	db := storagetest.Open(t)
	hm, err := hosts.New(hosts.Options{Store: db, Sealer: db.Sealer(), Addresses: policy})
	if err != nil {
		t.Fatal(err)
	}
	return newTestAPI(t, func(o *Options) { o.Hosts = hm })
}

// A host at a link-local or metadata address is a 422 naming the field
// and the flag that allows it, and so is a cluster node; with the flag,
// the host is registered.
func TestLinkLocalHostsRefusedUnlessAllowed(t *testing.T) {
	api := newHostsAPI(t, validation.AddressPolicy{})
	admin := api.adminToken()
	key := sshKey(t)
	for _, addr := range []string{"169.254.169.254", "::ffff:169.254.169.254", "fe80::1"} {
		r := api.do(http.MethodPost, apiPrefix+"/hosts", admin, map[string]any{"name": "meta", "address": addr, "sshKey": key})
		wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption, "address: ", "link-local", validation.AllowLinkLocalFlag)
	}
	if r := api.do(http.MethodPost, apiPrefix+"/hosts", admin, map[string]any{"name": "ok", "address": "10.0.0.11", "sshKey": key}); r.Status != http.StatusCreated {
		t.Fatalf("a routable host: %d %s", r.Status, r.Body)
	}
	r := api.do(http.MethodPut, apiPrefix+"/hosts/ok", admin, map[string]any{"address": "169.254.0.9"})
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption, "address: ", validation.AllowLinkLocalFlag)

	body := clusterJSON(t, "meta")
	body["nodes"].([]any)[1].(map[string]any)["address"] = "169.254.169.254"
	r = api.do(http.MethodPost, apiPrefix+"/clusters", admin, body)
	wantError(t, r, http.StatusUnprocessableEntity, CodeInvalidOption, "nodes[1].address: ", validation.AllowLinkLocalFlag)

	allowed := newHostsAPI(t, validation.AddressPolicy{AllowLinkLocal: true})
	r = allowed.do(http.MethodPost, apiPrefix+"/hosts", allowed.adminToken(), map[string]any{"name": "meta", "address": "169.254.169.254", "sshKey": key})
	if r.Status != http.StatusCreated {
		t.Errorf("with %s: %d %s", validation.AllowLinkLocalFlag, r.Status, r.Body)
	}
}

// Probes tell a refused port from a filtered one (the host's reason and
// hint), and commands show what a host answers: only the admin, who alone
// chooses the addresses, may register hosts, see them or run commands,
// so a user cannot learn the port states of arbitrary addresses.
func TestHostsAreAdminOnly(t *testing.T) {
	api := newHostsAPI(t, validation.AddressPolicy{})
	admin := api.adminToken()
	if r := api.do(http.MethodPost, apiPrefix+"/hosts", admin, map[string]any{"name": "h1", "address": "10.0.0.11", "sshKey": sshKey(t)}); r.Status != http.StatusCreated {
		t.Fatalf("register h1: %d %s", r.Status, r.Body)
	}
	user := api.createUser("viewer", "viewer-password")
	target := map[string]any{"name": "probe", "address": "10.0.0.12", "port": 6379, "sshKey": sshKey(t)}
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/hosts", nil},
		{http.MethodGet, "/hosts/h1", nil},
		{http.MethodPost, "/hosts", target},
		{http.MethodPut, "/hosts/h1", target},
		{http.MethodPost, "/hosts/h1?action=forgetHostKey", nil},
		{http.MethodDelete, "/hosts/h1", nil},
		{http.MethodGet, "/hosts/commands", nil},
		{http.MethodPost, "/hosts/h1/commands", map[string]any{"command": []string{"true"}}},
		{http.MethodPost, "/hosts/commands?selector=a%3Db", map[string]any{"command": []string{"true"}}},
		{http.MethodPost, "/clusters", clusterJSON(t, "probe")},
	} {
		r := api.do(req.method, apiPrefix+req.path, user, req.body)
		wantError(t, r, http.StatusForbidden, CodePermissionDenied, "only admin can")
	}
}
