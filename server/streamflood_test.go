package server

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestStreamFloodLeavesOtherCallsAnswering: 5,000 stream attempts from
// three read-only users at one address get their bound's worth of
// streams and a 429 for the rest, while /healthz, /readyz and the admin's
// calls keep their pace: their p50 during the flood stays within 5 times
// the p50 before it (with a floor, for a busy machine).
func TestStreamFloodLeavesOtherCallsAnswering(t *testing.T) {
	const (
		attempts   = 5000
		dialers    = 8
		perUser    = 8
		perAddress = 16 // below 3 users × perUser: the address bound holds
		ratio      = 5
		floor      = 2 * time.Millisecond // a p50 below it counts as it
		limit      = 3 * time.Minute      // the whole test, flood included
	)
	api := newTestAPI(t, func(o *Options) {
		o.StreamLimits = StreamLimits{PerUser: perUser, PerAddress: perAddress, Total: 4 * perAddress}
	})
	admin := api.adminToken()
	var tokens []string
	for _, u := range []string{"ann", "bob", "carl"} {
		tokens = append(tokens, api.createUser(u, u+"-secret"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	probeLatencies(ctx, t, api, admin, 6, nil) // warm up the probe's connection
	before := median(probeLatencies(ctx, t, api, admin, 60, nil))

	var (
		next, refused, failed atomic.Int64
		opened                = make([][]*websocket.Conn, dialers) // each dialer's own
		firstErr              atomic.Value
		wg                    sync.WaitGroup
	)
	defer func() {
		for _, conns := range opened {
			for _, c := range conns {
				c.Close()
			}
		}
	}()
	d := &websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	start := time.Now()
	for w := range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= attempts {
					return
				}
				conn, resp, err := d.DialContext(ctx, eventsURL(api, tokens[i%int64(len(tokens))]), nil)
				switch {
				case err == nil:
					opened[w] = append(opened[w], conn)
				case resp != nil && resp.StatusCode == http.StatusTooManyRequests:
					refused.Add(1)
				default:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		}()
	}
	flooding := make(chan struct{})
	go func() {
		wg.Wait()
		close(flooding)
	}()
	during := probeLatencies(ctx, t, api, admin, 10*attempts, flooding)
	<-flooding // every dial is bounded by ctx
	took := time.Since(start)

	accepted := 0
	for _, conns := range opened {
		accepted += len(conns)
	}
	t.Logf("flood: %d attempts in %s: %d accepted, %d refused, %d failed; probes p50 %s before, %s during (%d probes)",
		int64(accepted)+refused.Load()+failed.Load(), took.Round(time.Millisecond), accepted, refused.Load(), failed.Load(), before, median(during), len(during))
	if ctx.Err() != nil {
		t.Fatalf("the flood did not end within %s", limit)
	}
	if failed.Load() != 0 {
		t.Errorf("%d attempts failed otherwise than with a 429, the first: %v", failed.Load(), firstErr.Load())
	}
	if accepted != perAddress || refused.Load() != attempts-perAddress {
		t.Errorf("accepted %d, refused %d; want %d accepted (the address bound) and the rest refused", accepted, refused.Load(), perAddress)
	}
	if got, bound := median(during), ratio*max(before, floor); got > bound {
		t.Errorf("p50 of other calls during the flood = %s, want at most %s (%d × the p50 before, %s, floored at %s)", got, bound, ratio, before, floor)
	}
}
