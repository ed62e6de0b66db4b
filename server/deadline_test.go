package server

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/pubsub"
)

// shortWriteTimeout is the per-request write deadline of these tests;
// they wait a few times this long for it to pass.
const shortWriteTimeout = 150 * time.Millisecond

// pastDeadline waits until a request started now would be past its write
// deadline, with margin.
func pastDeadline() { time.Sleep(3 * shortWriteTimeout) }

func TestWebsocketOutlivesTheRequestWriteDeadline(t *testing.T) {
	api := newTestAPI(t, func(o *Options) { o.WriteTimeout = shortWriteTimeout })
	admin := api.adminToken()
	u := "ws" + strings.TrimPrefix(api.URL, "http") + wsPrefix + "/events?token=" + url.QueryEscape(admin)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	conn, resp, err := d.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial events: %v (%v)", err, resp)
	}
	defer conn.Close()
	pastDeadline()
	api.Server.opts.Bus.Publish(pubsub.Event{Cluster: "late", Time: time.Now()})
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var ev pubsub.Event
	if err := conn.ReadJSON(&ev); err != nil || ev.Cluster != "late" {
		t.Fatalf("event written after the request's write deadline: %+v, %v", ev, err)
	}
}

func TestEachRequestGetsItsOwnWriteDeadline(t *testing.T) {
	api := newTestAPI(t, func(o *Options) { o.WriteTimeout = shortWriteTimeout })
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(api.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	get := func(path string) int {
		t.Helper()
		if _, err := conn.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("GET %s on a kept-alive connection: %v", path, err)
		}
		defer resp.Body.Close()
		if _, err := bufio.NewReader(resp.Body).WriteTo(discard{}); err != nil {
			t.Fatalf("GET %s body: %v", path, err)
		}
		return resp.StatusCode
	}
	if s := get("/healthz"); s != 200 {
		t.Fatalf("healthz = %d", s)
	}
	pastDeadline()
	// An answer written by the authentication layer (not a route handler)
	// must not meet the first request's deadline.
	if s := get(apiPrefix + "/clusters"); s != http.StatusUnauthorized {
		t.Fatalf("second request on the connection = %d, want 401", s)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
