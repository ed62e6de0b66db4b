package server

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// forwardedClientHeader carries, from a follower to the leader, the address
// of the client the follower forwards a request for, sealed with the key
// every replica of the installation shares: the leader then throttles
// logins by the real client's address instead of the follower's, and no
// client can forge the header to escape its own throttle.
const forwardedClientHeader = "X-Singlecloud-Forwarded-Client"

// forwardedClientMaxAge bounds how far the time a header was sealed at may
// be from the leader's clock (either way, for the replicas' clock skew).
const forwardedClientMaxAge = time.Minute

// forwardedNonceTTL is how long the leader remembers a nonce it accepted:
// a header is accepted while its seal time is within forwardedClientMaxAge
// of the leader's clock, so at most 2×forwardedClientMaxAge after its
// first use; a nonce forgotten after that belongs to a stale header.
const forwardedNonceTTL = 2 * forwardedClientMaxAge

// forwardedNonceCap bounds the nonces the leader remembers (about 100
// bytes each, so 1.6 MB at most). Only password checks read the header,
// and bcrypt bounds those to a few hundred a minute per core: a leader
// never needs this many within forwardedNonceTTL. Beyond it the header is
// refused (the follower's own address is throttled) rather than the
// memory grown.
const forwardedNonceCap = 1 << 14

// forwardedWarnInterval spaces the warnings about refused headers: a
// replay attempt may come with every request.
const forwardedWarnInterval = 10 * time.Second

// Why the leader refused a forwarded-client header.
var (
	errForwardedUnreadable = errors.New("not sealed with this installation's key")
	errForwardedStale      = errors.New("sealed more than a minute away from this replica's clock (or the replicas' clocks differ that much)")
	errForwardedMoved      = errors.New("sealed for another request (method or path)")
	errForwardedReplayed   = errors.New("already used: replayed")
	errForwardedFull       = errors.New("too many recent headers remembered")
)

// Sealer seals and opens values with the installation's key
// (storage.Sealer).
type Sealer interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// forwardedClientAAD binds the sealed value to its use and format (v2: a
// forwardedClient; the bare "time address" of earlier releases does not
// open).
var forwardedClientAAD = []byte("singlecloud forwarded client v2")

// forwardedClient is what a follower seals into forwardedClientHeader:
// the client's address, bound to the one request it comes with (its
// method and request URI), the time it was sealed and a random nonce the
// leader accepts once. The link between replicas may be plain HTTP: a
// header copied off it can neither be sent again nor moved to another
// request, so it cannot charge failed logins to its client's address.
type forwardedClient struct {
	Addr   string `json:"a"`
	Method string `json:"m"`
	URI    string `json:"u"`
	Sealed int64  `json:"t"` // unix seconds
	Nonce  string `json:"n"`
}

// sealClient seals addr for out, the request a follower sends the leader,
// at now, for forwardedClientHeader.
func sealClient(s Sealer, addr string, out *http.Request, now time.Time) (string, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal the forwarded client: %w", err)
	}
	plain, err := json.Marshal(forwardedClient{Addr: addr, Method: out.Method, URI: out.URL.RequestURI(),
		Sealed: now.Unix(), Nonce: base64.RawURLEncoding.EncodeToString(nonce)})
	if err != nil {
		return "", fmt.Errorf("seal the forwarded client: %w", err)
	}
	sealed, err := s.Seal(plain, forwardedClientAAD)
	if err != nil {
		return "", fmt.Errorf("seal the forwarded client: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// clientAddr is the address r comes from: the one a follower sealed in
// forwardedClientHeader for this very request, when it opens with
// Options.ReplicaSealer, is recent and was not used before; else
// r.RemoteAddr (the follower's, for a forwarded request). A refused header
// is logged without its value. Call it once per request: it uses up the
// header.
func (s *Server) clientAddr(r *http.Request) string {
	h := r.Header.Get(forwardedClientHeader)
	if h == "" || s.opts.ReplicaSealer == nil {
		return r.RemoteAddr
	}
	addr, err := s.openClient(h, r)
	if err != nil {
		s.log.Debug("forwarded client header refused", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr, "error", err)
		if n, ok := s.forwardedRefused.note(s.now(), forwardedWarnInterval); ok {
			s.log.Warn("refused forwarded client headers; those requests are throttled by the sending replica's address",
				"refused", n, "last_from", r.RemoteAddr, "last_error", err)
		}
		return r.RemoteAddr
	}
	return addr
}

// openClient opens h, checks it was sealed for r recently, and uses up its
// nonce.
func (s *Server) openClient(h string, r *http.Request) (string, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return "", fmt.Errorf("%w: not base64", errForwardedUnreadable)
	}
	plain, err := s.opts.ReplicaSealer.Open(sealed, forwardedClientAAD)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errForwardedUnreadable, err)
	}
	var c forwardedClient
	if err := json.Unmarshal(plain, &c); err != nil || c.Addr == "" || c.Nonce == "" {
		return "", fmt.Errorf("%w: not a forwarded client", errForwardedUnreadable)
	}
	now := s.now()
	if now.Sub(time.Unix(c.Sealed, 0)).Abs() > forwardedClientMaxAge {
		return "", errForwardedStale
	}
	if c.Method != r.Method || c.URI != requestURI(r) {
		return "", errForwardedMoved
	}
	if s.forwardedNonces == nil {
		return "", errForwardedFull
	}
	if err := s.forwardedNonces.use(c.Nonce, now); err != nil {
		return "", err
	}
	return c.Addr, nil
}

// requestURI is r's path and query as its client sent them.
func requestURI(r *http.Request) string {
	if r.RequestURI != "" {
		return r.RequestURI
	}
	return r.URL.RequestURI()
}

// now is the time of the server's injected clock (LoginLimits.Clock).
func (s *Server) now() time.Time {
	if s.logins != nil {
		return s.logins.limits.Clock()
	}
	return time.Now()
}
