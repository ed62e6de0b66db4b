package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"syscall"
	"time"
)

// CodeNoLeader is the error code of a request no leader could answer: none
// is elected yet, the one answering has just been elected and is loading,
// or it has just lost its leadership; or the process is still starting
// (Startup), replicated or not.
const CodeNoLeader = "NoLeader"

// forwardedHeader marks a request a follower forwarded, with its
// advertise URL: a replica that does not lead refuses it instead of
// forwarding it again, so a stale view of the leader never loops.
const forwardedHeader = "X-Singlecloud-Forwarded-By"

// Timeouts of forwarding to the leader.
const (
	// forwardDialTimeout bounds connecting to the leader: on loopback or
	// a LAN a connection takes milliseconds; a leader that does not
	// accept within this is gone, and the client should hear so soon.
	forwardDialTimeout = 5 * time.Second
	// forwardHeaderTimeout bounds waiting for the leader's response
	// headers: above the leader's own DefaultWriteTimeout, which bounds
	// every REST call there (a websocket's 101 comes at once).
	forwardHeaderTimeout = DefaultWriteTimeout + 10*time.Second
	// idleForwardTimeout closes a connection to the leader unused this
	// long; forwardIdleConns is how many are kept: a follower reuses them
	// for the next requests instead of paying a connection (and a TLS
	// handshake) each time, and a few dozen cover a busy API.
	idleForwardTimeout = 90 * time.Second
	forwardIdleConns   = 32
)

// ReplicaOptions configures NewReplica. Leader and Local are required.
type ReplicaOptions struct {
	// Ready lists the checks of this replica's GET /readyz.
	Ready []ReadinessCheck
	// Version is the build, for GET /version.
	Version VersionInfo
	// Self is this replica's advertise URL.
	Self string
	// Leader returns the leader's advertise URL, "" while none is known.
	Leader func() string
	// Local returns this replica's API while it leads and has loaded
	// its state, nil otherwise.
	Local func() http.Handler
	// TLS configures forwarding to an https leader; nil means the
	// system's roots.
	TLS *tls.Config
	// Logger receives forwarding failures; nil discards them.
	Logger *slog.Logger
	// Sealer, if set, seals the client's address into each forwarded
	// request, for the leader's login throttle (Options.ReplicaSealer).
	Sealer Sealer
	// Reads, if set, returns the API this replica answers reads with
	// from its own copy of the store while it does not lead, nil while it
	// has none; Sync, required with it, waits until that copy holds every
	// write acknowledged before the call.
	Reads func() *Follower
	Sync  func(context.Context) error
}

// NewReplica returns the front handler of a singlecloud replica sharing
// its store with others: it answers GET /healthz, /readyz and /version
// itself (with the leader's URL; /version only for the admin's token,
// checked on Reads' copy of the store); every other request, websockets
// included, goes to Local while this replica leads. A follower answers
// the reads Reads serves itself, and forwards the rest to the leader's
// advertise URL unchanged (its token checked there). While no
// leader can answer it is a 503 NoLeader saying to retry.
func NewReplica(opts ReplicaOptions) (http.Handler, error) {
	if opts.Leader == nil || opts.Local == nil {
		return nil, errors.New("new replica: Leader and Local are required")
	}
	if opts.Reads != nil && opts.Sync == nil {
		return nil, errors.New("new replica: Sync is required with Reads")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	transport := &http.Transport{
		Proxy:                 nil, // replicas talk directly, never through HTTP_PROXY
		DialContext:           (&net.Dialer{Timeout: forwardDialTimeout}).DialContext,
		TLSHandshakeTimeout:   forwardDialTimeout,
		TLSClientConfig:       opts.TLS,
		ResponseHeaderTimeout: forwardHeaderTimeout,
		MaxIdleConnsPerHost:   forwardIdleConns,
		IdleConnTimeout:       idleForwardTimeout,
	}
	s := &Server{
		opts: Options{Ready: opts.Ready, Version: opts.Version, Leader: opts.Leader, Replica: opts.Self, Logger: log},
		log:  log, errorRules: defaultErrorRules(), metrics: noMetrics{},
		ready: newReadiness(opts.Ready),
	}
	r := &replica{s: s, opts: opts, transport: transport}
	s.adminCheck = r.isAdmin
	return s.public(http.HandlerFunc(r.serve)), nil
}

type replica struct {
	s         *Server
	opts      ReplicaOptions
	transport *http.Transport
	// behind samples the warnings about reads forwarded because the
	// copy of the store was behind.
	behind logSample
}

func (rp *replica) serve(w http.ResponseWriter, r *http.Request) {
	if h := rp.opts.Local(); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	if rp.serveRead(w, r) {
		return
	}
	leader := rp.opts.Leader()
	switch {
	case leader == "":
		rp.unavailable(w, r, "no singlecloud replica leads at the moment (an election is under way, or etcd is "+
			"unreachable): retry in a few seconds")
		return
	case leader == rp.opts.Self:
		rp.unavailable(w, r, "this replica has just been elected leader and is loading its state, or has just "+
			"stopped leading: retry in a few seconds (if this lasts, another replica advertises this one's URL: "+
			"give each replica its own --advertise-url)")
		return
	case r.Header.Get(forwardedHeader) != "":
		rp.unavailable(w, r, fmt.Sprintf("the leadership is changing (%s forwarded this request here, but %s leads "+
			"now): retry in a few seconds", r.Header.Get(forwardedHeader), leader))
		return
	}
	target, err := url.Parse(leader)
	if err != nil || target.Host == "" {
		rp.unavailable(w, r, fmt.Sprintf("the leader advertises %q, which is not a URL: fix its --advertise-url", leader))
		return
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the client's view of the API, for redirects and websockets
			pr.SetXForwarded()
			pr.Out.Header.Set(forwardedHeader, rp.opts.Self)
			pr.Out.Header.Del(forwardedClientHeader)
			if rp.opts.Sealer != nil {
				// Sealed for pr.Out as the leader receives it (method,
				// path and query after SetURL).
				c, err := sealClient(rp.opts.Sealer, pr.In.RemoteAddr, pr.Out, time.Now())
				if err != nil {
					rp.s.log.Warn("forward without the client's address: the leader throttles its logins by this "+
						"replica's", "error", err)
				} else {
					pr.Out.Header.Set(forwardedClientHeader, c)
				}
			}
		},
		Transport:     rp.transport,
		FlushInterval: -1, // streams (logs, backups) reach the client as the leader writes them
		ErrorLog:      slog.NewLogLogger(rp.s.log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// A refused connection never delivered the request: 503,
			// safe to send again. Any other failure may have reached
			// the leader: 502, which a client repeats only for a read.
			// Either way the leader may be failing over: Retry-After.
			status := http.StatusBadGateway
			if errors.Is(err, syscall.ECONNREFUSED) {
				status = http.StatusServiceUnavailable
			}
			w.Header().Set("Retry-After", retryAfterNoLeader)
			// writeError logs the cause; the client reads the APIError.
			rp.s.writeError(w, r, fmt.Errorf("forward to the leader: %w (%v)", &APIError{Status: status,
				Code: CodeNoLeader, Message: fmt.Sprintf("the leader %s did not answer (it may be failing over): retry in a "+
					"few seconds", leader)}, err))
		},
	}
	proxy.ServeHTTP(w, r)
}

// serveRead answers r from this replica's copy of the store if it is a
// read the follower serves, once the copy holds every write acknowledged
// before r arrived (so a client never reads older data than it wrote,
// through whichever replica). It reports false when r is to be forwarded:
// not such a read, or the copy did not catch up within
// followerSyncTimeout.
func (rp *replica) serveRead(w http.ResponseWriter, r *http.Request) bool {
	if rp.opts.Reads == nil {
		return false
	}
	f := rp.opts.Reads()
	if f == nil || !f.Serves(r) {
		return false
	}
	if f.TokenValid(r) {
		ctx, cancel := context.WithTimeout(r.Context(), followerSyncTimeout)
		err := rp.opts.Sync(ctx)
		cancel()
		if err != nil {
			rp.logBehind(r, err)
			return false
		}
	}
	f.Handler().ServeHTTP(w, r)
	return true
}

// behindLogInterval spaces the warnings about reads forwarded because the
// copy of the store is behind: an etcd hiccup forwards many at once.
const behindLogInterval = 10 * time.Second

// logBehind warns that a read went to the leader, at most once per
// behindLogInterval, with how many did since the last warning.
func (rp *replica) logBehind(r *http.Request, err error) {
	if n, ok := rp.behind.note(time.Now(), behindLogInterval); ok {
		rp.s.log.Warn("reads forwarded to the leader", "reads", n, "last", r.URL.Path, "error", errBehind(err))
	}
}

// isAdmin reports whether r carries the admin's token, checked on this
// replica's copy of the store (for /version); false while it has none.
func (rp *replica) isAdmin(r *http.Request) bool {
	if rp.opts.Reads == nil {
		return false
	}
	f := rp.opts.Reads()
	return f != nil && f.s.isAdmin(r)
}

// retryAfterNoLeader is the Retry-After of a NoLeader answer: an election
// ends within the leader's TTL, polled at this pace.
const retryAfterNoLeader = "2"

func (rp *replica) unavailable(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Retry-After", retryAfterNoLeader)
	rp.s.writeError(w, r, &APIError{Status: http.StatusServiceUnavailable, Code: CodeNoLeader, Message: msg})
}
