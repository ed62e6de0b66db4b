package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// CodeTooManyRequests is the error code of a 429: a throttled login.
const CodeTooManyRequests = "TooManyRequests"

// Login throttle defaults. Only failed password checks are charged: a
// client that logs in before every call (as singlecloud's own test suite
// does) is never slowed, while guessing is. The per-address bucket is the
// tight one, so that one attacker is stopped without touching anyone
// else. The per-user bucket bounds guessing one user's password from many
// addresses to about one guess a second; an attacker with a handful of
// addresses can keep it empty, which would lock that user out everywhere,
// so an address that logged in successfully as the user within
// DefaultLoginTrust skips the per-user bucket (its own per-address bucket
// still applies). A user who has never logged in from an address, or not
// for a day, can still be kept out from there by such an attacker.
const (
	// DefaultAddrLoginBurst failed logins from one client address, then
	// one every DefaultAddrLoginEvery (720 an hour).
	DefaultAddrLoginBurst = 5
	DefaultAddrLoginEvery = 5 * time.Second
	// DefaultUserLoginBurst failed logins as one user, from anywhere,
	// then one every DefaultUserLoginEvery.
	DefaultUserLoginBurst = 10
	DefaultUserLoginEvery = time.Second
	// DefaultLoginKeys bounds the addresses and the user names the
	// throttle remembers (each): about 200 bytes each, so a few MB at
	// most however many addresses an attacker has.
	DefaultLoginKeys = 10000
	// DefaultLoginTrust is how long after a successful login as a user
	// its client address skips that user's bucket: a day covers a user
	// who logs in every working day from the same place.
	DefaultLoginTrust = 24 * time.Hour
	// DefaultLoginTrusted bounds the (address, user) pairs remembered
	// for that, about 150 bytes each; the oldest success goes first.
	DefaultLoginTrusted = 10000
	// DefaultLoginQueueWait bounds how long a login waits for a free
	// password check slot before it is told to retry: a flood queues
	// behind the slots, and a client should hear back well before its
	// own timeout.
	DefaultLoginQueueWait = 5 * time.Second
)

// LoginLimits tunes the login throttle; the zero value is the defaults
// above, with half the CPUs (at least one) checking passwords at a time,
// so that a login flood leaves the other half to the rest of the API.
type LoginLimits struct {
	AddrBurst int
	AddrEvery time.Duration
	UserBurst int
	UserEvery time.Duration
	// MaxKeys bounds each of the address and user tables.
	MaxKeys int
	// TrustFor is how long after a successful login as a user its
	// address skips the user's bucket; MaxTrusted bounds the pairs kept.
	TrustFor   time.Duration
	MaxTrusted int
	// Checks is how many password checks (bcrypt) may run at once.
	Checks    int
	QueueWait time.Duration
	// Clock gives the time the buckets refill by; nil means time.Now.
	Clock func() time.Time
}

func (l *LoginLimits) fill() error {
	if l.AddrBurst < 0 || l.UserBurst < 0 || l.AddrEvery < 0 || l.UserEvery < 0 || l.MaxKeys < 0 || l.Checks < 0 || l.QueueWait < 0 || l.TrustFor < 0 || l.MaxTrusted < 0 {
		return errors.New("LoginLimits: negative values are not allowed; use 0 for the defaults")
	}
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&l.AddrBurst, DefaultAddrLoginBurst)
	setInt(&l.UserBurst, DefaultUserLoginBurst)
	setInt(&l.MaxKeys, DefaultLoginKeys)
	setInt(&l.MaxTrusted, DefaultLoginTrusted)
	setDur(&l.TrustFor, DefaultLoginTrust)
	setInt(&l.Checks, max(1, runtime.NumCPU()/2))
	setDur(&l.AddrEvery, DefaultAddrLoginEvery)
	setDur(&l.UserEvery, DefaultUserLoginEvery)
	setDur(&l.QueueWait, DefaultLoginQueueWait)
	if l.Clock == nil {
		l.Clock = time.Now
	}
	return nil
}

// loginThrottle admits password checks: per-address and per-user token
// buckets charged by failures, the addresses trusted to skip a user's
// bucket, and a semaphore bounding the checks that run at once. It is
// safe for concurrent use.
type loginThrottle struct {
	limits LoginLimits
	slots  chan struct{}

	mu      sync.Mutex
	byAddr  *bucketTable
	byUser  *bucketTable
	trusted *trustTable
}

// checkResult is what a password check admitted by the throttle found.
type checkResult int

const (
	// checkOther: no verdict on a password (a malformed request, a
	// store error, or a change that checked no password).
	checkOther checkResult = iota
	// checkFailed: the password was wrong; the buckets are charged.
	checkFailed
	// checkPassed: the password was right; the address is trusted for
	// the user from now on (see DefaultLoginTrust).
	checkPassed
)

func newLoginThrottle(l LoginLimits) (*loginThrottle, error) {
	if err := l.fill(); err != nil {
		return nil, err
	}
	return &loginThrottle{
		limits:  l,
		slots:   make(chan struct{}, l.Checks),
		byAddr:  newBucketTable(rate.Every(l.AddrEvery), l.AddrBurst, l.MaxKeys),
		byUser:  newBucketTable(rate.Every(l.UserEvery), l.UserBurst, l.MaxKeys),
		trusted: newTrustTable(l.TrustFor, l.MaxTrusted),
	}, nil
}

// admit waits for a password check slot for user from r's client. It
// answers 429 (with Retry-After set on w) when either bucket is empty or
// no slot frees up within QueueWait, and ctx's error when the client goes
// away. The user's bucket is skipped for an address trusted for user. On
// success the caller runs the check, then calls done with what it found;
// done releases the slot.
func (t *loginThrottle) admit(w http.ResponseWriter, r *http.Request, user string) (done func(checkResult), err error) {
	addr := clientKey(r.RemoteAddr)
	user = userKey(user)
	if err := t.check(w, addr, user); err != nil {
		return nil, err
	}
	timer := time.NewTimer(t.limits.QueueWait)
	defer timer.Stop()
	select {
	case t.slots <- struct{}{}:
	case <-r.Context().Done():
		return nil, fmt.Errorf("log in as %s: %w", user, r.Context().Err())
	case <-timer.C:
		return nil, tooManyRequests(w, time.Second, "the server is busy checking other logins")
	}
	// The buckets may have emptied while this login queued.
	if err := t.check(w, addr, user); err != nil {
		<-t.slots
		return nil, err
	}
	return func(result checkResult) {
		now := t.limits.Clock()
		t.mu.Lock()
		switch result {
		case checkFailed:
			t.byAddr.charge(addr, now)
			t.byUser.charge(user, now)
		case checkPassed:
			t.trusted.remember(addr, user, now)
		}
		t.mu.Unlock()
		<-t.slots
	}, nil
}

// check refuses with 429 while addr's bucket is empty, or user's bucket
// unless addr is trusted for user.
func (t *loginThrottle) check(w http.ResponseWriter, addr, user string) error {
	now := t.limits.Clock()
	t.mu.Lock()
	wait := t.byAddr.wait(addr, now)
	if !t.trusted.trusted(addr, user, now) {
		wait = max(wait, t.byUser.wait(user, now))
	}
	t.mu.Unlock()
	if wait > 0 {
		return tooManyRequests(w, wait, "too many failed logins from this address or for this user")
	}
	return nil
}

// tooManyRequests is the 429 for a throttled login; it sets Retry-After
// (whole seconds, at least 1) on w.
func tooManyRequests(w http.ResponseWriter, wait time.Duration, why string) error {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return &APIError{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests,
		Message: fmt.Sprintf("%s; retry in %d s", why, secs)}
}

// clientKey is the bucket key of a client: the TCP peer's address (never
// a forwarded-for header, which the client writes), or its /64 for IPv6,
// since one IPv6 host commonly holds a whole /64.
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// maxUserKeyLen bounds the user names the throttle keeps as they are:
// every valid user name is shorter (63 characters at most).
const maxUserKeyLen = 64

// userKey is the bucket key of the user name a login gives. The name comes
// from the URL, so it may be as long as a request line; a longer name than
// any user can have is replaced by its SHA-256, so that every key, and so
// the table, stays small however long the names an attacker sends.
func userKey(user string) string {
	if len(user) <= maxUserKeyLen {
		return user
	}
	sum := sha256.Sum256([]byte(user))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// bucketTable is a bounded map of token buckets. A key is added on its
// first charge only, and a bucket that has refilled completely holds no
// information, so it is the first to go when the table is full.
type bucketTable struct {
	limit   rate.Limit
	burst   int
	max     int
	buckets map[string]*rate.Limiter
}

func newBucketTable(limit rate.Limit, burst, max int) *bucketTable {
	return &bucketTable{limit: limit, burst: burst, max: max, buckets: map[string]*rate.Limiter{}}
}

// wait is how long key must wait for a token at now; 0 when it has one.
func (b *bucketTable) wait(key string, now time.Time) time.Duration {
	l := b.buckets[key]
	if l == nil {
		return 0
	}
	tokens := l.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(b.limit) * float64(time.Second))
}

// charge takes a token from key's bucket, into debt if it has none (a
// failure that raced past the check still counts).
func (b *bucketTable) charge(key string, now time.Time) {
	l := b.buckets[key]
	if l == nil {
		if len(b.buckets) >= b.max {
			b.evict(now)
		}
		l = rate.NewLimiter(b.limit, b.burst)
		b.buckets[key] = l
	}
	l.ReserveN(now, 1)
}

// evict drops every full bucket, and if none was full, the fullest one.
func (b *bucketTable) evict(now time.Time) {
	fullest, most := "", math.Inf(-1)
	for k, l := range b.buckets {
		tokens := l.TokensAt(now)
		if tokens >= float64(b.burst) {
			delete(b.buckets, k)
			continue
		}
		if tokens > most {
			fullest, most = k, tokens
		}
	}
	if len(b.buckets) >= b.max {
		delete(b.buckets, fullest)
	}
}
