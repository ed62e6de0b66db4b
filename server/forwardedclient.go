package server

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// forwardedClientHeader carries, from a follower to the leader, the address
// of the client the follower forwards a request for, sealed with the key
// every replica of the installation shares: the leader then throttles
// logins by the real client's address instead of the follower's, and no
// client can forge the header to escape its own throttle.
const forwardedClientHeader = "X-Singlecloud-Forwarded-Client"

// forwardedClientMaxAge bounds how old a sealed client address may be: a
// header copied off the wire between replicas is useless soon after.
const forwardedClientMaxAge = time.Minute

// Sealer seals and opens values with the installation's key
// (storage.Sealer).
type Sealer interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
}

// forwardedClientAAD binds the sealed value to its use.
var forwardedClientAAD = []byte("singlecloud forwarded client")

// sealClient seals the address addr at now for forwardedClientHeader; ""
// if it cannot.
func sealClient(s Sealer, addr string, now time.Time) string {
	sealed, err := s.Seal([]byte(strconv.FormatInt(now.Unix(), 10)+" "+addr), forwardedClientAAD)
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(sealed)
}

// clientAddr is the address r comes from: the one a follower sealed in
// forwardedClientHeader when it opens with Options.ReplicaSealer and is
// recent, else r.RemoteAddr.
func (s *Server) clientAddr(r *http.Request) string {
	h := r.Header.Get(forwardedClientHeader)
	if h == "" || s.opts.ReplicaSealer == nil {
		return r.RemoteAddr
	}
	sealed, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		return r.RemoteAddr
	}
	plain, err := s.opts.ReplicaSealer.Open(sealed, forwardedClientAAD)
	if err != nil {
		return r.RemoteAddr
	}
	stamp, addr, ok := strings.Cut(string(plain), " ")
	sec, err := strconv.ParseInt(stamp, 10, 64)
	if !ok || err != nil || time.Since(time.Unix(sec, 0)).Abs() > forwardedClientMaxAge {
		return r.RemoteAddr
	}
	return addr
}
