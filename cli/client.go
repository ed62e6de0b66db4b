package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/zdnscloud/singlecloud/internal/wait"
)

// API paths, as the server serves them.
const (
	apiPrefix = "/apis/zcloud.cn/v1"
	wsPrefix  = "/apis/ws.zcloud.cn/v1"
)

// Bounds of the client: a request (and its answer) must complete within
// requestTimeout; a websocket must open within dialTimeout, and a stream
// silent for longer than streamIdle (the server pings every 30 s) is taken
// for dead and reconnected.
const (
	requestTimeout = 60 * time.Second
	dialTimeout    = 15 * time.Second
	streamIdle     = 75 * time.Second
	maxAnswerBytes = 64 << 20
	// failoverWait bounds how long a request is repeated while the
	// replicas elect a leader (a NoLeader answer with Retry-After): a
	// leader's lease (5 s by default) and a few seconds.
	failoverWait = 30 * time.Second
	// maxRetryAfter caps one pause, whatever the server asks.
	maxRetryAfter = 5 * time.Second
)

// APIError is the API's error envelope ({code, status, type, message}); the
// message names the fields concerned by their JSON paths (nodes[0].address).
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
	// Fields lists each invalid field of a 422 (a server that predates the
	// list sends none: the message alone names them).
	Fields []FieldProblem `json:"fields,omitempty"`
}

// FieldProblem is one invalid field of a request: its JSON path and what
// is wrong with it.
type FieldProblem struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error renders it as kubectl does a server's error.
func (e *APIError) Error() string {
	return fmt.Sprintf("Error from server (%s): %s", e.Code, e.Message)
}

// client talks to one server, as one user.
type client struct {
	base   *url.URL
	token  string
	http   *http.Client
	dialer *websocket.Dialer
	// idle bounds how long a stream may send nothing (0: streamIdle).
	idle time.Duration
	// sleep pauses between the tries of a request (nil: wait.Sleep).
	sleep func(ctx context.Context, d time.Duration) bool
}

// tlsOptions are how the server's certificate is checked.
type tlsOptions struct {
	insecure bool
	caFile   string
}

// newClient makes a client of server (http or https URL) with token
// (empty for a login).
func newClient(server, token string, opts tlsOptions) (*client, error) {
	u, err := url.Parse(strings.TrimRight(server, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("server %q is not an http:// or https:// URL", server)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.insecure} //nolint:gosec // asked for by --insecure-skip-tls-verify
	if opts.caFile != "" {
		pem, err := os.ReadFile(opts.caFile)
		if err != nil {
			return nil, fmt.Errorf("certificate-authority: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("certificate-authority: %s holds no PEM certificate", opts.caFile)
		}
		tc.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.ResponseHeaderTimeout = requestTimeout
	return &client{
		base:  u,
		token: token,
		http:  &http.Client{Transport: tr, Timeout: requestTimeout, CheckRedirect: checkRedirect},
		dialer: &websocket.Dialer{
			Proxy:            http.ProxyFromEnvironment,
			HandshakeTimeout: dialTimeout,
			TLSClientConfig:  tc,
		},
	}, nil
}

// do sends method path?query with body (nil, []byte of JSON, or a value
// to encode) and decodes a 2xx answer into out (when not nil). A non-2xx
// answer is an *APIError.
func (c *client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	raw, err := c.raw(ctx, method, path, query, body)
	if err != nil || out == nil || len(bytes.TrimSpace(raw)) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not what was expected: %w", method, path, err)
	}
	return nil
}

// raw is do without decoding: the answer's body. While the server's
// replicas have no leader (a NoLeader answer with Retry-After) the request
// is sent again, for at most failoverWait: always when it was not
// delivered (503), and for a read when the leader may have received it
// (502).
func (c *client) raw(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	var payload []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		payload = b
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
		payload = js
	}
	sleep := c.sleep
	if sleep == nil {
		sleep = wait.Sleep
	}
	var waited time.Duration
	for {
		raw, retryAfter, err := c.once(ctx, method, path, query, payload)
		var apiErr *APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.Code != codeNoLeader || retryAfter <= 0 ||
			!(apiErr.Status == http.StatusServiceUnavailable || apiErr.Status == http.StatusBadGateway && method == http.MethodGet) {
			return raw, err
		}
		pause := min(retryAfter, maxRetryAfter)
		if waited+pause > failoverWait {
			return nil, fmt.Errorf("%w (no leader for %s)", err, waited)
		}
		if !sleep(ctx, pause) {
			return nil, fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		waited += pause
	}
}

// codeNoLeader is the server's error code while its replicas have no
// leader to answer (server.CodeNoLeader).
const codeNoLeader = "NoLeader"

// once sends the request one time: the answer's body, and the pause its
// Retry-After asks for (0 without one).
func (c *client) once(ctx context.Context, method, path string, query url.Values, payload []byte) ([]byte, time.Duration, error) {
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	u := *c.base
	u.Path += apiPrefix + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, 0, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", method, c.base.Host, scrubURLError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var retryAfter time.Duration
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			retryAfter = time.Duration(secs) * time.Second
		}
		return nil, retryAfter, decodeAPIError(resp.StatusCode, raw)
	}
	return raw, 0, nil
}

// stream GETs path?query and returns the answer to read as it comes (a
// snapshot download, as large as etcd): no overall timeout, the caller's
// context bounds it, but the answer's headers must come within
// requestTimeout and then its body may not stall: a stream that sends
// nothing for the idle bound (streamIdle) is cancelled, its read failing
// with errStalled. A non-2xx answer is an *APIError.
func (c *client) stream(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	idle := c.idle
	if idle <= 0 {
		idle = streamIdle
	}
	u := *c.base
	u.Path += apiPrefix + path
	u.RawQuery = query.Encode()
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	stalled := fmt.Errorf("%w: nothing came from %s for %s", errStalled, c.base.Host, idle)
	timer := time.AfterFunc(idle, func() { cancel(stalled) })
	hc := *c.http
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		timer.Stop()
		if cause := context.Cause(ctx); errors.Is(cause, errStalled) {
			err = cause
		}
		cancel(nil)
		return nil, fmt.Errorf("GET %s: %w", c.base.Host, scrubURLError(err))
	}
	if resp.StatusCode/100 != 2 {
		defer cancel(nil)
		defer timer.Stop()
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, decodeAPIError(resp.StatusCode, raw)
	}
	resp.Body = &idleBody{rc: resp.Body, ctx: ctx, cancel: cancel, timer: timer, idle: idle}
	return resp, nil
}

// errStalled is a stream that sent nothing for its idle bound.
var errStalled = errors.New("the stream stalled")

// idleBody is a stream's body whose every read that brings bytes pushes
// back the idle timer (which cancels the request when it fires).
type idleBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(b.ctx); errors.Is(cause, errStalled) {
			err = cause
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	b.cancel(nil)
	return b.rc.Close()
}

// decodeAPIError reads the error envelope of a failed request; an answer
// that is not one (a proxy's page) still says what the status was.
func decodeAPIError(status int, raw []byte) *APIError {
	var e APIError
	if json.Unmarshal(raw, &e) == nil && e.Code != "" {
		if e.Status == 0 {
			e.Status = status
		}
		return &e
	}
	text := strings.TrimSpace(string(raw))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &APIError{Status: status, Code: http.StatusText(status), Message: text}
}

// scrubURLError drops the URL from a transport error (it carries no token,
// but a websocket URL would): the host is named by the caller.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// dial opens the websocket at path?query, the token in the query (as the
// server wants it for websockets) and never in an error message. A
// redirect is never followed (gorilla's dialer does not).
func (c *client) dial(ctx context.Context, path string, query url.Values) (*websocket.Conn, error) {
	u := *c.base
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path += wsPrefix + path
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("token", c.token)
	u.RawQuery = q.Encode()
	conn, resp, err := c.dialer.DialContext(ctx, u.String(), nil)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			// The dialer follows no redirect; one to another origin says
			// where to log in, as a request's does.
			if loc, lerr := u.Parse(resp.Header.Get("Location")); resp.StatusCode/100 == 3 && lerr == nil && origin(loc) != origin(&u) {
				return nil, &redirectError{from: c.base, to: loc}
			}
			raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSwitchingProtocols {
				return nil, decodeAPIError(resp.StatusCode, raw)
			}
		}
		return nil, fmt.Errorf("websocket %s%s: %w", c.base.Host, wsPrefix+path, scrubURLError(err))
	}
	conn.SetReadLimit(16 << 20)
	_ = conn.SetReadDeadline(time.Now().Add(streamIdle))
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(streamIdle))
		return conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(10*time.Second))
	})
	return conn, nil
}

// readFrame reads one text message into v, extending the idle deadline.
func readFrame(conn *websocket.Conn, v any) error {
	_, msg, err := conn.ReadMessage()
	if err != nil {
		return err
	}
	_ = conn.SetReadDeadline(time.Now().Add(streamIdle))
	if err := json.Unmarshal(msg, v); err != nil {
		return fmt.Errorf("a frame is not JSON: %w", err)
	}
	return nil
}

// closeConn says goodbye (bounded) and closes conn.
func closeConn(conn *websocket.Conn) {
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = conn.Close()
}
