package server

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/clustermanager"
)

func (s *Server) registerZkelogRoutes(ws *mux.Router) {
	ws.Handle("/clusters/{cluster}/zkelog", s.handle(s.streamZkelog)).Methods(http.MethodGet)
}

// streamZkelog sends the cluster's current or last operation log (SPEC
// §7): every frame so far (after ?since=<seq>), then live log and progress
// frames, then the result frame, then a normal close. A client that falls
// behind is disconnected with a close code that tells it to reconnect
// with ?since= the last seq it saw; it loses nothing.
func (s *Server) streamZkelog(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "read installer logs"); err != nil {
		return err
	}
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidOption, Message: "since: must be the seq number of the last frame received (a non-negative integer)"}
		}
		since = n
	}
	frames, live, stop, err := s.opts.Clusters.FollowLog(mux.Vars(r)["cluster"], since)
	if err != nil {
		return err
	}
	defer stop()
	conn, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return errHijacked
	}
	ctx, done := s.trackStream(r.Context())
	defer done()
	stream := newWSStream(ctx, conn)
	for _, f := range frames {
		if err := stream.writeJSON(f); err != nil {
			stream.close(websocket.CloseGoingAway, "write failed")
			return errHijacked
		}
	}
	if live == nil {
		stream.close(websocket.CloseNormalClosure, "operation finished")
		return errHijacked
	}
	var last clustermanager.Frame
	if len(frames) > 0 {
		last = frames[len(frames)-1]
	}
	for {
		select {
		case <-stream.ctx.Done():
			stream.close(websocket.CloseGoingAway, "server shutting down")
			return errHijacked
		case f, ok := <-live:
			if !ok {
				if last.Type == clustermanager.FrameResult {
					stream.close(websocket.CloseNormalClosure, "operation finished")
				} else {
					stream.close(websocket.CloseTryAgainLater, "fell behind: reconnect with ?since="+strconv.FormatUint(last.Seq, 10))
				}
				return errHijacked
			}
			last = f
			if err := stream.writeJSON(f); err != nil {
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
