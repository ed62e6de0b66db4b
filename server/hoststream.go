package server

import (
	"net/http"

	"github.com/gorilla/mux"
	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/hosts"
)

// The kinds of message of a host command's websocket.
const (
	hostMsgRecord   = "record"
	hostMsgOutput   = "output"
	hostMsgDone     = "done"
	hostMsgDropped  = "dropped"
	hostMsgFinished = "finished"
)

// hostCommandMessage is one JSON message of a host command's websocket;
// Type says what it carries:
//   - "record": Record, the command as it stood when the stream opened
//     (Running, without results, while it runs); always first.
//   - "output": Host, Stream ("stdout" or "stderr"), Offset (where Data
//     starts in that host's stream: a gap is output not kept for a client
//     that joined late) and Data (whole characters).
//   - "done": Host, Done, ExitCode and Error: that host has finished.
//   - "dropped": Dropped and Error: the client fell behind and output was
//     dropped; the stream then closes with 1013 (try again later).
//   - "finished": Record, the finished record with every result; the
//     stream then closes normally.
type hostCommandMessage struct {
	Type     string               `json:"type"`
	Record   *hostCommandResource `json:"record,omitempty"`
	Host     string               `json:"host,omitempty"`
	Stream   string               `json:"stream,omitempty"`
	Offset   *int64               `json:"offset,omitempty"`
	Data     string               `json:"data,omitempty"`
	Done     bool                 `json:"done,omitempty"`
	ExitCode *int                 `json:"exitCode,omitempty"`
	Error    string               `json:"error,omitempty"`
	Dropped  bool                 `json:"dropped,omitempty"`
}

func recordMessage(kind string, rec hosts.CommandRecord) hostCommandMessage {
	res := toHostCommandResource(rec)
	return hostCommandMessage{Type: kind, Record: &res}
}

func chunkMessage(c hosts.CommandChunk) hostCommandMessage {
	switch {
	case c.Dropped:
		return hostCommandMessage{Type: hostMsgDropped, Dropped: true, Error: c.Error}
	case c.Done:
		return hostCommandMessage{Type: hostMsgDone, Host: c.Host, Done: true, ExitCode: &c.ExitCode, Error: c.Error}
	default:
		return hostCommandMessage{Type: hostMsgOutput, Host: c.Host, Stream: c.Stream, Offset: &c.Offset, Data: c.Data}
	}
}

// streamHostCommand answers GET /apis/ws.zcloud.cn/v1/hosts/commands/{id}
// (admin) with a websocket that follows the command: its record so far,
// then each host's output as it comes and its end, then the finished
// record, then a normal close (at once for a finished command). Like every
// websocket it lives under the websocket prefix, where the token may come
// as ?token= (browsers cannot set headers on a websocket); the REST path
// with ?watch=true serves it too, the token then in the Authorization
// header. An unknown command is a 404 before the upgrade. A client that
// falls behind is told so and disconnected; following again replays the
// output kept so far.
func (s *Server) streamHostCommand(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "follow commands run on hosts"); err != nil {
		return err
	}
	id := mux.Vars(r)["id"]
	// A stream beyond the bounds is refused before its log is read.
	if err := s.streamRoom(w, r); err != nil {
		return err
	}
	rec, chunks, stop, err := s.opts.Hosts.FollowCommand(id)
	if err != nil {
		return err
	}
	defer stop()
	stream, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	if err := stream.writeJSON(recordMessage(hostMsgRecord, rec)); err != nil {
		stream.close(websocket.CloseGoingAway, "write failed")
		return errHijacked
	}
	for {
		select {
		case <-stream.ctx.Done():
			stream.end()
			return errHijacked
		case c, ok := <-chunks:
			if !ok {
				s.finishHostCommandStream(stream, id)
				return errHijacked
			}
			if err := stream.writeJSON(chunkMessage(c)); err != nil {
				stream.close(websocket.CloseGoingAway, "write failed")
				return errHijacked
			}
			if c.Dropped {
				stream.close(websocket.CloseTryAgainLater, "fell behind: follow the command again")
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

// finishHostCommandStream sends command id's finished record and closes
// the stream normally; the manager stores the record before it ends the
// followers' channels.
func (s *Server) finishHostCommandStream(stream *wsStream, id string) {
	rec, err := s.opts.Hosts.Command(id)
	if err != nil {
		s.log.Warn("host command stream: read the finished record", "id", id, "error", err)
		stream.close(websocket.CloseInternalServerErr, "the finished record cannot be read: GET the command")
		return
	}
	if err := stream.writeJSON(recordMessage(hostMsgFinished, rec)); err != nil {
		stream.close(websocket.CloseGoingAway, "write failed")
		return
	}
	stream.close(websocket.CloseNormalClosure, "command finished")
}
