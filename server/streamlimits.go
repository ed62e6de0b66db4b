package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Stream bounds. A websocket stream (events, a cluster's or an
// application's log, a host command's output) holds a connection, so a
// file descriptor, two goroutines and their buffers for as long as its
// client wants: 20,000 of them, opened by one read-only user, once used
// every descriptor of the process and 940 MB, and the admin's calls and
// /healthz timed out (issue 23).
const (
	// DefaultStreamsPerUser bounds one user's open streams: the console
	// opens one events stream per tab plus one per log it shows, the
	// command line one per `events` or `logs -f`; a person with a dozen
	// tabs and a few commands stays under 20, so 64 leaves room while a
	// script looping on a leaked token is stopped early.
	DefaultStreamsPerUser = 64
	// DefaultStreamsPerAddress bounds the streams from one client
	// address (clientKey: an IPv4 address, an IPv6 /64): two users'
	// worth, for a few people behind one NAT. Behind a reverse proxy
	// every client shares its address: raise it there.
	DefaultStreamsPerAddress = 128
	// DefaultMaxStreams caps the default total: each stream costs about
	// 47 KB (940 MB for 20,000), so 4,096 of them stay under 200 MB.
	DefaultMaxStreams = 4096
	// streamRetryAfter is the Retry-After of a refused stream: an open
	// stream frees its place only when it closes, so a client retrying
	// at once would find the same streams open.
	streamRetryAfter = 5 * time.Second
)

// StreamLimits bounds the open websocket streams; a stream beyond any of
// them is refused with 429 before the upgrade. A zero field is its
// default (DefaultStreamLimits).
type StreamLimits struct {
	PerUser    int
	PerAddress int
	Total      int
}

// DefaultStreamLimits returns the limits a zero StreamLimits stands for in
// a process that may open openFiles files (its RLIMIT_NOFILE soft limit;
// 0 when unknown). Total is half of openFiles, so that REST calls, SSH
// sessions to hosts, Kubernetes and etcd clients and the database keep
// the other half, and at most DefaultMaxStreams.
func DefaultStreamLimits(openFiles uint64) StreamLimits {
	total := uint64(DefaultMaxStreams)
	if openFiles > 0 {
		total = max(1, min(total, openFiles/2))
	}
	return StreamLimits{PerUser: DefaultStreamsPerUser, PerAddress: DefaultStreamsPerAddress, Total: int(total)}
}

// fill replaces zero fields by the defaults for this process's open files
// limit, and refuses negative ones.
func (l *StreamLimits) fill() error {
	if l.PerUser < 0 || l.PerAddress < 0 || l.Total < 0 {
		return fmt.Errorf("StreamLimits %+v: negative values are not allowed; use 0 for the defaults", *l)
	}
	def := DefaultStreamLimits(openFilesLimit())
	if l.PerUser == 0 {
		l.PerUser = def.PerUser
	}
	if l.PerAddress == 0 {
		l.PerAddress = def.PerAddress
	}
	if l.Total == 0 {
		l.Total = def.Total
	}
	return nil
}

// streamBound names one of the bounds of StreamLimits.
type streamBound string

const (
	boundUser    streamBound = "per user"
	boundAddress streamBound = "per address"
	boundTotal   streamBound = "total"
)

// streamLimitError is a stream refused because one of the bounds is
// reached; its text says which, and what to do.
type streamLimitError struct {
	bound streamBound
	who   string // the user or the address; empty for the total
	open  int
}

func (e *streamLimitError) Error() string {
	switch e.bound {
	case boundUser:
		return fmt.Sprintf("user %s has %d streams open, the most one user may have (per user limit): close one of them "+
			"(a console tab, an events or logs command) before opening another", e.who, e.open)
	case boundAddress:
		return fmt.Sprintf("%d streams are open from address %s, the most one address may have (per address limit): "+
			"close some of them before opening another", e.open, e.who)
	default:
		return fmt.Sprintf("the server has %d streams open, the most it serves at once (total limit): "+
			"close streams you do not need, or try again later", e.open)
	}
}

// refuseStream turns a streamLimitError into the 429 the client reads,
// with Retry-After set on w; any other error is returned as is.
func refuseStream(w http.ResponseWriter, err error) error {
	var le *streamLimitError
	if errors.As(err, &le) {
		return tooManyRequests(w, streamRetryAfter, le.Error())
	}
	return err
}
