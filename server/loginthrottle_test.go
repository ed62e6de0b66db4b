package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/server/auth"
)

// loginFrom is a login request of user from the client at addr.
func loginFrom(addr, user string) (*httptest.ResponseRecorder, *http.Request) {
	r := httptest.NewRequest(http.MethodPost, apiPrefix+"/users/"+user+"?action=login", nil)
	r.RemoteAddr = addr
	return httptest.NewRecorder(), r
}

// attempt runs one password check through th: failed says whether the
// password was wrong (else it was right). It returns the 429's
// Retry-After, or "" when the check was admitted.
func attempt(t *testing.T, th *loginThrottle, addr, user string, failed bool) string {
	t.Helper()
	w, r := loginFrom(addr, user)
	done, err := th.admit(w, r, user)
	if err != nil {
		api, ok := err.(*APIError)
		if !ok || api.Status != http.StatusTooManyRequests || api.Code != CodeTooManyRequests {
			t.Fatalf("admit error %v, want a 429 TooManyRequests", err)
		}
		return w.Header().Get("Retry-After")
	}
	if failed {
		done(checkFailed)
	} else {
		done(checkPassed)
	}
	return ""
}

func TestLoginThrottleBuckets(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th, err := newLoginThrottle(LoginLimits{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const attacker = "192.0.2.1:4000"

	// Successful logins cost nothing: a client that logs in before every
	// call is never slowed.
	for i := range 50 {
		if ra := attempt(t, th, attacker, "admin", false); ra != "" {
			t.Fatalf("successful login %d throttled (Retry-After %s)", i, ra)
		}
	}
	// Five failures from one address, then it waits 5 s per attempt.
	for i := range DefaultAddrLoginBurst {
		if ra := attempt(t, th, attacker, "admin", true); ra != "" {
			t.Fatalf("failure %d throttled, want a burst of %d", i, DefaultAddrLoginBurst)
		}
	}
	if ra := attempt(t, th, attacker, "admin", false); ra != "5" {
		t.Fatalf("after the burst: Retry-After %q, want 5 (even for the right password)", ra)
	}
	// The attacker's failures do not lock the admin out from elsewhere:
	// the user bucket still has room.
	if ra := attempt(t, th, "198.51.100.7:1", "admin", false); ra != "" {
		t.Fatalf("admin from another address throttled (Retry-After %s)", ra)
	}
	clock.Add(4 * time.Second)
	if ra := attempt(t, th, attacker, "admin", true); ra != "1" {
		t.Fatalf("4 s later: Retry-After %q, want 1", ra)
	}
	clock.Add(time.Second)
	if ra := attempt(t, th, attacker, "admin", true); ra != "" {
		t.Fatalf("5 s later: throttled (Retry-After %s), want one more try", ra)
	}

	// Many addresses guessing one user's password: the user bucket (10,
	// then one a second) stops them, whatever their address buckets say.
	clock.Add(time.Hour)
	for i := range DefaultUserLoginBurst {
		if ra := attempt(t, th, fmt.Sprintf("203.0.113.%d:1", i), "ann", true); ra != "" {
			t.Fatalf("distributed failure %d throttled", i)
		}
	}
	if ra := attempt(t, th, "203.0.113.200:1", "ann", false); ra != "1" {
		t.Fatalf("user bucket empty: Retry-After %q, want 1", ra)
	}
	if ra := attempt(t, th, "203.0.113.200:1", "bob", false); ra != "" {
		t.Fatalf("another user throttled by ann's bucket (Retry-After %s)", ra)
	}
	clock.Add(time.Second)
	if ra := attempt(t, th, "203.0.113.200:1", "ann", false); ra != "" {
		t.Fatalf("a second later ann is still throttled (Retry-After %s)", ra)
	}
}

func TestLoginThrottleMemoryBounded(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th, err := newLoginThrottle(LoginLimits{Clock: clock.Now, MaxKeys: 8})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		attempt(t, th, fmt.Sprintf("10.0.%d.%d:1", i/256, i%256), fmt.Sprintf("u%d", i), true)
		if a, u := len(th.byAddr.buckets), len(th.byUser.buckets); a > 8 || u > 8 {
			t.Fatalf("after %d clients the tables hold %d addresses and %d users, want at most 8 each", i+1, a, u)
		}
	}
	// A drained bucket is kept over full ones: the attacker who drained
	// it stays throttled while idle clients make room.
	for range DefaultAddrLoginBurst {
		attempt(t, th, "192.0.2.9:1", "x", true)
	}
	clock.Add(time.Hour) // every other bucket refills
	for range DefaultAddrLoginBurst {
		attempt(t, th, "192.0.2.9:1", "x", true)
	}
	for i := range 7 {
		attempt(t, th, fmt.Sprintf("10.1.0.%d:1", i), "y", true)
	}
	if ra := attempt(t, th, "192.0.2.9:1", "z", false); ra == "" {
		t.Fatal("the drained address was evicted while full buckets were kept")
	}
}

// TestLoginThrottleLongUserNames: user names come from the URL, up to the
// size of a request line; the throttle keeps a small key for each, and a
// long name is still throttled as itself.
func TestLoginThrottleLongUserNames(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th, err := newLoginThrottle(LoginLimits{Clock: clock.Now, AddrBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 512<<10)
	for i := range DefaultUserLoginBurst {
		if ra := attempt(t, th, fmt.Sprintf("192.0.2.%d:1", i), long, true); ra != "" {
			t.Fatalf("failure %d as the long name throttled", i)
		}
	}
	if ra := attempt(t, th, "192.0.2.200:1", long, false); ra != "1" {
		t.Fatalf("the long name's bucket is empty: Retry-After %q, want 1", ra)
	}
	if ra := attempt(t, th, "192.0.2.200:1", long+"b", false); ra != "" {
		t.Fatalf("another long name throttled by the first one's bucket (Retry-After %s)", ra)
	}
	for key := range th.byUser.buckets {
		if len(key) > 80 {
			t.Fatalf("the user table keeps a key of %d bytes; want every key short", len(key))
		}
	}
}

func TestLoginThrottleBoundsConcurrentChecks(t *testing.T) {
	th, err := newLoginThrottle(LoginLimits{Checks: 2, QueueWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var dones []func(checkResult)
	for i := range 2 {
		w, r := loginFrom("127.0.0.1:1", "admin")
		done, err := th.admit(w, r, "admin")
		if err != nil {
			t.Fatalf("check %d: %v", i, err)
		}
		dones = append(dones, done)
	}
	w, r := loginFrom("127.0.0.1:1", "admin")
	if _, err := th.admit(w, r, "admin"); err == nil || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("third concurrent check: %v, Retry-After %q; want a 429 after the queue wait", err, w.Header().Get("Retry-After"))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w, r = loginFrom("127.0.0.1:1", "admin")
	if _, err := th.admit(w, r.WithContext(ctx), "admin"); err == nil {
		t.Fatal("a check whose client left was admitted")
	}
	dones[0](checkOther)
	w, r = loginFrom("127.0.0.1:1", "admin")
	done, err := th.admit(w, r, "admin")
	if err != nil {
		t.Fatalf("after a slot freed: %v", err)
	}
	done(checkOther)
	dones[1](checkOther)
}

func TestClientKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:4000":            "192.0.2.1",
		"[2001:db8::1]:443":         "2001:db8::/64",
		"[2001:db8::ffff:1]:1":      "2001:db8::/64",
		"[::ffff:192.0.2.1]:1":      "192.0.2.1",
		"not an address":            "not an address",
		"[2001:db8:0:1::1]:1":       "2001:db8:0:1::/64",
		"127.0.0.1:1":               "127.0.0.1",
		"[fe80::1%eth0]:1":          "fe80::/64",
		"198.51.100.20:65535":       "198.51.100.20",
		"[2001:db8:aaaa:bbbb::]:80": "2001:db8:aaaa:bbbb::/64",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoginThrottledOverHTTP(t *testing.T) {
	clock := &testClock{t: time.Now()}
	api := newTestAPI(t, func(o *Options) { o.LoginLimits.Clock = clock.Now })
	wrong := map[string]string{"password": auth.PasswordDigest("wrong")}
	for range DefaultAddrLoginBurst {
		wantError(t, api.do(http.MethodPost, apiPrefix+"/users/admin?action=login", "", wrong), 401, CodeUnauthorized)
	}
	r := api.do(http.MethodPost, apiPrefix+"/users/admin?action=login", "", map[string]string{"password": auth.PasswordDigest(testAdminPassword)})
	wantError(t, r, http.StatusTooManyRequests, CodeTooManyRequests, "retry in 5 s")
	if ra := r.Header.Get("Retry-After"); ra != "5" {
		t.Fatalf("Retry-After = %q, want 5", ra)
	}
	// A token holder guessing its own old password is throttled too.
	clock.Add(time.Hour)
	token := api.createUser("ann", "ann-pw")
	for range DefaultAddrLoginBurst {
		r := api.do(http.MethodPost, apiPrefix+"/users/ann?action=resetPassword", token,
			map[string]string{"oldPassword": auth.PasswordDigest("guess"), "newPassword": auth.PasswordDigest("x")})
		wantError(t, r, 401, CodeUnauthorized)
	}
	r = api.do(http.MethodPost, apiPrefix+"/users/ann?action=resetPassword", token,
		map[string]string{"oldPassword": auth.PasswordDigest("guess"), "newPassword": auth.PasswordDigest("x")})
	wantError(t, r, http.StatusTooManyRequests, CodeTooManyRequests)
	clock.Add(time.Hour)
	api.adminToken()
}

// TestLoginFloodLeavesAPIResponsive floods logins with the right password
// (never throttled by the buckets, so every one costs a full bcrypt check)
// and checks that GET /clusters stays fast meanwhile: the password checks
// are bounded to half the CPUs.
func TestLoginFloodLeavesAPIResponsive(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the login flood takes a few seconds")
	}
	api := newTestAPI(t)
	// A real-cost hash (bcrypt.DefaultCost), as production stores.
	users, err := auth.NewUsers(api.DB, auth.UsersOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.Create(auth.User{Name: "flood"}, auth.PasswordDigest("flood-pw")); err != nil {
		t.Fatal(err)
	}
	token := api.adminToken()
	list := func() time.Duration {
		start := time.Now()
		if r := api.do(http.MethodGet, apiPrefix+"/clusters", token, nil); r.Status != http.StatusOK {
			t.Fatalf("GET /clusters: %d %s", r.Status, r.Body)
		}
		return time.Since(start)
	}
	median := func(n int) time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = list()
		}
		slices.Sort(ds)
		return ds[n/2]
	}
	before := median(20)

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var checks atomic.Int64
	body := `{"password":"` + auth.PasswordDigest("flood-pw") + `"}`
	client := &http.Client{Timeout: 30 * time.Second}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.URL+apiPrefix+"/users/flood?action=login", strings.NewReader(body))
				if err != nil {
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					continue // canceled by stop
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					checks.Add(1)
				}
			}
		}()
	}
	// Measure once the flood's password checks are running.
	deadline := time.Now().Add(20 * time.Second)
	for checks.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	during := median(30)
	stop()
	wg.Wait()
	t.Logf("GET /clusters median %s before, %s during a flood of 16 login loops (%d logins done)", before, during, checks.Load())
	if checks.Load() < 1 {
		t.Fatalf("the flood completed only %d logins: it did not run", checks.Load())
	}
	if limit := max(20*before, 50*time.Millisecond); during > limit {
		t.Fatalf("GET /clusters median during the login flood is %s, over %s (20x its %s before)", during, limit, before)
	}
}

// drainUser empties user's bucket with failures from n fresh addresses
// of 203.0.113.0/24 starting at first, as an attacker with many addresses
// would, and checks that a stranger with the right password is then
// refused.
func drainUser(t *testing.T, th *loginThrottle, user string, first int) {
	t.Helper()
	for i := range DefaultUserLoginBurst + 2 {
		attempt(t, th, fmt.Sprintf("203.0.113.%d:1", first+i), user, true)
	}
	if ra := attempt(t, th, "192.0.2.250:1", user, false); ra == "" {
		t.Fatalf("%s's bucket is not empty after the attack", user)
	}
}

// TestLoginThrottleTrustsKnownAddress: attackers with a dozen addresses
// keep the admin's bucket empty, yet the admin still logs in from where
// they logged in within a day; that address's own bucket still applies.
func TestLoginThrottleTrustsKnownAddress(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th, err := newLoginThrottle(LoginLimits{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	const home, failedOnly = "198.51.100.7:1", "198.51.100.8:1"
	if ra := attempt(t, th, home, "admin", false); ra != "" {
		t.Fatalf("first login throttled (Retry-After %s)", ra)
	}
	attempt(t, th, failedOnly, "admin", true) // a failure trusts nothing
	clock.Add(23 * time.Hour)

	drainUser(t, th, "admin", 0)
	if ra := attempt(t, th, home, "admin", false); ra != "" {
		t.Fatalf("the admin's usual address is locked out by the distributed attack (Retry-After %s)", ra)
	}
	if ra := attempt(t, th, failedOnly, "admin", false); ra == "" {
		t.Fatal("an address that only failed skipped the user's bucket")
	}
	// Trust is per user: home is a stranger for ann.
	drainUser(t, th, "ann", 100)
	if ra := attempt(t, th, home, "ann", false); ra == "" {
		t.Fatal("an address trusted for admin skipped ann's bucket")
	}

	// The address's own bucket still applies to a trusted address.
	for range DefaultAddrLoginBurst {
		attempt(t, th, home, "admin", true)
	}
	if ra := attempt(t, th, home, "admin", false); ra != "5" {
		t.Fatalf("trusted address after its own burst: Retry-After %q, want 5", ra)
	}

	// The last success renewed the trust; a day without one ends it.
	clock.Add(DefaultLoginTrust + time.Minute)
	drainUser(t, th, "admin", 200)
	if ra := attempt(t, th, home, "admin", false); ra == "" {
		t.Fatal("the address is still trusted a day after its last successful login")
	}
}

// TestLoginTrustBounded: the trusted pairs are bounded, the oldest success
// going first, and keep short keys however long the user name.
func TestLoginTrustBounded(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	th, err := newLoginThrottle(LoginLimits{Clock: clock.Now, MaxTrusted: 3})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 512<<10)
	for i, user := range []string{"u0", "u1", "u2", "u0", long} {
		attempt(t, th, "198.51.100.1:1", user, false)
		clock.Add(time.Minute)
		if n := len(th.trusted.byKey); n > 3 || th.trusted.order.Len() != n {
			t.Fatalf("after %d successes the trust table holds %d pairs (list %d), want at most 3", i+1, n, th.trusted.order.Len())
		}
	}
	now := clock.Now()
	addr := clientKey("198.51.100.1:1")
	for user, want := range map[string]bool{"u0": true, "u1": false, "u2": true, long: true} {
		if got := th.trusted.trusted(addr, userKey(user), now); got != want {
			t.Errorf("trusted for %.10s = %v, want %v (u1's success is the oldest)", user, got, want)
		}
	}
	for key := range th.trusted.byKey {
		if len(key) > 150 {
			t.Fatalf("the trust table keeps a key of %d bytes; want every key short", len(key))
		}
	}
}
