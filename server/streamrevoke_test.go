package server

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// streamEndBound is how soon a stream must close once its token is
// revoked or expires: at once, give or take a busy machine.
const streamEndBound = 5 * time.Second

// fakeAlarms are Alarms a test fires by hand (fire), instead of waiting
// for the token's expiry.
type fakeAlarms struct {
	mu      sync.Mutex
	pending []*fakeAlarm
	added   chan time.Time // the time of each At, for the test to wait on
}

type fakeAlarm struct {
	at   time.Time
	f    func()
	done bool // fired or stopped
}

func newFakeAlarms() *fakeAlarms { return &fakeAlarms{added: make(chan time.Time, 16)} }

func (a *fakeAlarms) At(t time.Time, f func()) func() bool {
	al := &fakeAlarm{at: t, f: f}
	a.mu.Lock()
	a.pending = append(a.pending, al)
	a.mu.Unlock()
	a.added <- t
	return func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		was := !al.done
		al.done = true
		return was
	}
}

// fire runs every alarm due at now, each in a goroutine of its own as
// time.AfterFunc does, and returns how many.
func (a *fakeAlarms) fire(now time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, al := range a.pending {
		if !al.done && !al.at.After(now) {
			al.done = true
			n++
			go al.f()
		}
	}
	return n
}

// wantClosed reads conn until the server closes it, within
// streamEndBound, and checks the close frame's code and reason.
func wantClosed(t *testing.T, conn *websocket.Conn, code int, reason string) {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(streamEndBound))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue // an event sent before the end
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("stream not closed by the server within %s: %v", streamEndBound, err)
		}
		if ce.Code != code || !strings.Contains(ce.Text, reason) {
			t.Fatalf("close frame %d %q, want %d with %q", ce.Code, ce.Text, code, reason)
		}
		t.Logf("closed after %s: %d %q", time.Since(start).Round(time.Millisecond), ce.Code, ce.Text)
		return
	}
}

// A user's open streams end within seconds when the user's password
// changes or the user is deleted, with a close frame that says so; the
// other users' streams go on.
func TestStreamsEndWhenTheUsersTokensAreRevoked(t *testing.T) {
	newPassword := map[string]string{"password": auth.PasswordDigest("new-secret")}
	tests := []struct {
		name   string
		revoke func(api *testAPI, admin, ann string) response
		reason string
	}{
		{"own password changed", func(api *testAPI, _, ann string) response {
			return api.do(http.MethodPost, apiPrefix+"/users/ann?action=resetPassword", ann,
				map[string]string{"oldPassword": auth.PasswordDigest("ann-secret"), "newPassword": auth.PasswordDigest("new-secret")})
		}, "the password changed"},
		{"password reset by the admin", func(api *testAPI, admin, _ string) response {
			return api.do(http.MethodPost, apiPrefix+"/users/ann?action=resetPassword", admin, newPassword)
		}, "the password changed"},
		{"user deleted", func(api *testAPI, admin, _ string) response {
			return api.do(http.MethodDelete, apiPrefix+"/users/ann", admin, nil)
		}, "the user was deleted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newTestAPI(t)
			admin := api.adminToken()
			ann := api.createUser("ann", "ann-secret")
			annConns := []*websocket.Conn{dialEvents(t, api, ann), dialEvents(t, api, ann)}
			adminConn := dialEvents(t, api, admin)
			if r := tc.revoke(api, admin, ann); r.Status/100 != 2 {
				t.Fatalf("revoke: %d %s", r.Status, r.Body)
			}
			for _, c := range annConns {
				wantClosed(t, c, websocket.ClosePolicyViolation, "token revoked: "+tc.reason)
			}
			api.Server.opts.Bus.Publish(pubsub.Event{Kind: pubsub.ClusterCreated, Cluster: "after", Time: time.Now()})
			_ = adminConn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var ev pubsub.Event
			if err := adminConn.ReadJSON(&ev); err != nil || ev.Cluster != "after" {
				t.Fatalf("the admin's stream after ann's revocation: %+v, %v", ev, err)
			}
			if r := refusedDial(t, api, ann); r.Status != http.StatusUnauthorized {
				t.Fatalf("a new stream with the revoked token = %d %s, want 401", r.Status, r.Body)
			}
		})
	}
}

// A stream ends at its token's expiry (the injected clock and alarms
// stand for the 24 hours), not a moment before.
func TestStreamEndsAtItsTokensExpiry(t *testing.T) {
	alarms := newFakeAlarms()
	api := newTestAPI(t, func(o *Options) { o.Alarms = alarms })
	issued := api.Clock.Now()
	ann := api.createUser("ann", "ann-secret")
	conn := dialEvents(t, api, ann)
	timer := time.NewTimer(streamEndBound)
	defer timer.Stop()
	var at time.Time
	select {
	case at = <-alarms.added:
	case <-timer.C:
		t.Fatalf("no alarm set for the stream's token expiry within %s", streamEndBound)
	}
	if want := issued.Add(auth.TokenLifetime); at.Sub(want).Abs() > time.Second {
		t.Fatalf("alarm at %s, want the token's expiry %s", at, want)
	}
	api.Clock.Add(auth.TokenLifetime - time.Minute)
	if n := alarms.fire(api.Clock.Now()); n != 0 {
		t.Fatalf("%d alarms fired a minute before the token's expiry", n)
	}
	api.Clock.Add(time.Minute)
	if n := alarms.fire(api.Clock.Now()); n != 1 {
		t.Fatalf("%d alarms fired at the token's expiry, want 1", n)
	}
	wantClosed(t, conn, websocket.ClosePolicyViolation, "token expired: log in again")
}
