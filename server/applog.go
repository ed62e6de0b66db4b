package server

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/applications"
)

// logSince parses ?since=N, the number of the last log line a client has.
func logSince(r *http.Request) (uint64, error) {
	q := r.URL.Query().Get("since")
	if q == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(q, 10, 64)
	if err != nil {
		return 0, &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidOption, Message: "since: " + strconv.Quote(q) + " is not a log line number (a non-negative integer)"}
	}
	return n, nil
}

// streamApplicationLog sends an application instance's log as the zkelog
// sends a cluster's (admin): every line so far (after ?since=N), then live
// lines until the instance settles (Installed, Failed, Uninstalled), then
// a normal close. A client that falls behind is closed with a code that
// tells it to reconnect with ?since= the last seq it saw; it loses
// nothing.
func (s *Server) streamApplicationLog(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "read application logs"); err != nil {
		return err
	}
	since, err := logSince(r)
	if err != nil {
		return err
	}
	v := mux.Vars(r)
	// A stream beyond the bounds is refused before its log is read.
	if err := s.streamRoom(w, r); err != nil {
		return err
	}
	lines, live, stop, err := s.opts.Applications.FollowLog(v["env"], v["app"], since)
	if err != nil {
		return err
	}
	defer stop()
	stream, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	last := since
	for _, l := range lines {
		if err := stream.writeJSON(l); err != nil {
			stream.close(websocket.CloseGoingAway, "write failed")
			return errHijacked
		}
		last = l.Seq
	}
	if live == nil {
		stream.close(websocket.CloseNormalClosure, "settled")
		return errHijacked
	}
	var settledSeen bool
	for {
		select {
		case <-stream.ctx.Done():
			stream.end()
			return errHijacked
		case l, ok := <-live:
			if !ok {
				if settledSeen {
					stream.close(websocket.CloseNormalClosure, "settled")
				} else {
					stream.close(websocket.CloseTryAgainLater, "fell behind or gone: reconnect with ?since="+strconv.FormatUint(last, 10))
				}
				return errHijacked
			}
			last = l.Seq
			settledSeen = applications.Settled(l.Phase)
			if err := stream.writeJSON(l); err != nil {
				stream.close(websocket.CloseGoingAway, "write failed")
				return errHijacked
			}
		case <-stream.ping.C:
			if err := stream.writePing(); err != nil {
				stream.close(websocket.CloseGoingAway, "ping failed")
				return errHijacked
			}
		}
	}
}
