package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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
// with ?since= the last seq it saw; it loses nothing. ?format=text sends
// each frame as one plain text line instead, as the original singlecloud
// did (frameText).
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
	var asText bool
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
	case "text":
		asText = true
	default:
		return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidOption, Message: fmt.Sprintf("format: %q is not json (the default: one JSON frame per message) or text (one plain line per message)", f)}
	}
	// A stream beyond the bounds is refused before its log is read.
	if err := s.streamRoom(w, r); err != nil {
		return err
	}
	frames, live, stop, err := s.reads.FollowLog(mux.Vars(r)["cluster"], since)
	if err != nil {
		return err
	}
	defer stop()
	stream, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	write := func(f clustermanager.Frame) error { return stream.writeJSON(f) }
	if asText {
		write = func(f clustermanager.Frame) error { return stream.writeText(frameText(f)) }
	}
	for _, f := range frames {
		if err := write(f); err != nil {
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
			stream.end()
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
			if err := write(f); err != nil {
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

// frameText renders f as one line of text: its time, its kind or level,
// the step and node it concerns, and what it says, for clients that show
// the log as it comes. Runs of white space inside a message (line breaks
// included) become one space, so a frame is always one line.
func frameText(f clustermanager.Frame) string {
	var b strings.Builder
	b.WriteString(f.Time.UTC().Format(time.RFC3339))
	switch f.Type {
	case clustermanager.FrameLog:
		level := f.Level
		if level == "" {
			level = "info"
		}
		b.WriteString(" " + strings.ToUpper(level))
	default:
		b.WriteString(" " + strings.ToUpper(f.Type))
	}
	if f.Step != "" {
		b.WriteString(" [" + f.Step + "]")
	}
	if f.Node != "" {
		b.WriteString(" " + f.Node + ":")
	}
	switch f.Type {
	case clustermanager.FrameProgress:
		fmt.Fprintf(&b, " step %d/%d, %d%%", f.Index, f.Total, f.Percent)
	case clustermanager.FrameResult:
		if f.Status != "" {
			b.WriteString(" cluster is " + f.Status)
			if f.Message != "" {
				b.WriteString(":")
			}
		}
	}
	if f.Message != "" {
		b.WriteString(" " + strings.Join(strings.Fields(f.Message), " "))
	}
	return b.String()
}
