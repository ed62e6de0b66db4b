package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// maxErrorBody bounds what is read of an error response.
const maxErrorBody = 64 << 10

// call describes one Docker API request.
type call struct {
	// op names the operation in errors: "inspect container etcd".
	op string
	// method and path ("/containers/etcd/json", already escaped, without
	// the version prefix).
	method, path string
	query        url.Values
	// jsonBody is encoded as the JSON request body when non-nil.
	jsonBody any
	// body is sent as is with contentType when non-nil.
	body        io.Reader
	contentType string
	header      http.Header
	// wait is added to the per-call timeout for a call that waits on
	// purpose (a graceful stop).
	wait time.Duration
	// unversioned sends the request without the /vX.Y prefix (used to
	// negotiate the version).
	unversioned bool
}

// send runs c and returns the response for the caller to read and close
// when its status is below 400. ctx bounds everything, the response body
// included. Failures are classified: ctx errors wrapped with the
// operation, connection failures as *DaemonError, error statuses as
// *APIError.
func (c *Docker) send(ctx context.Context, cl call) (*http.Response, error) {
	path := cl.path
	if !cl.unversioned {
		v, err := c.apiVersion(ctx, cl.op)
		if err != nil {
			return nil, err
		}
		path = "/v" + v.String() + path
	}
	u := "http://docker" + path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	body := cl.body
	contentType := cl.contentType
	if cl.jsonBody != nil {
		data, err := json.Marshal(cl.jsonBody)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: encode request: %w", cl.op, c.node, err)
		}
		body, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", cl.op, c.node, err)
	}
	if body != nil && cl.jsonBody == nil {
		// Never let the transport close a reader the caller owns.
		req.Body = io.NopCloser(body)
	}
	for k, vs := range cl.header {
		req.Header[k] = vs
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	c.log.Debug("docker call", "op", cl.op, "method", cl.method, "path", path)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.connError(ctx, cl.op, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, fmt.Errorf("%s on %s: %w", cl.op, c.node, readAPIError(resp))
	}
	return resp, nil
}

// do runs a non-streaming call under the per-call timeout and decodes its
// JSON answer into out (nil discards it).
func (c *Docker) do(ctx context.Context, cl call, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.wait)
	defer cancel()
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return c.connError(ctx, cl.op, err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if ctx.Err() != nil || !isDecodeError(err) {
			return c.connError(ctx, cl.op, err)
		}
		return fmt.Errorf("%s on %s: decode answer: %w", cl.op, c.node, err)
	}
	return nil
}

// connError classifies a failure of the connection or of reading an
// answer: the context's own error when it ended (so that the caller sees
// context.Canceled or DeadlineExceeded), otherwise a *DaemonError.
func (c *Docker) connError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("%s on %s: %w: docker did not answer in time (is the daemon overloaded or hung?)", op, c.node, ctxErr)
		}
		return fmt.Errorf("%s on %s: %w", op, c.node, ctxErr)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err // drop the `Get "http://docker/...":` prefix
	}
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, fs.ErrPermission) {
		return &DaemonError{Node: c.node, Socket: c.socket, Op: op, Kind: ErrPermission, Err: err,
			Hint: fmt.Sprintf("add the SSH user to the docker group on %s (or connect as root)", c.node)}
	}
	return &DaemonError{Node: c.node, Socket: c.socket, Op: op, Kind: ErrDaemonUnreachable, Err: err,
		Hint: fmt.Sprintf("is docker running on %s? check the daemon (systemctl status docker) and the dockerSocket setting", c.node)}
}

// isDecodeError tells a malformed answer from a broken connection.
func isDecodeError(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// readAPIError turns an error response into an *APIError.
func readAPIError(resp *http.Response) *APIError {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var msg struct {
		Message string `json:"message"`
	}
	e := &APIError{Status: resp.StatusCode}
	if json.Unmarshal(data, &msg) == nil && msg.Message != "" {
		e.Message = msg.Message
	} else {
		e.Message = strings.TrimSpace(string(data))
	}
	return e
}

// escapeRef escapes an image reference or container name for a URL path,
// keeping its slashes (the daemon's router takes the rest of the path as
// the name).
func escapeRef(ref string) string {
	parts := strings.Split(ref, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// decodeJSON decodes a response body into out.
func decodeJSON(resp *http.Response, out any) error {
	return json.NewDecoder(resp.Body).Decode(out)
}
