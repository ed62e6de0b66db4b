package zke

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/pki"
)

// tunnelClient is an HTTPS client whose connections are opened from node n
// through its SSH connection, so that health endpoints bound to the node's
// internal address or to its 127.0.0.1 are reachable from singlecloud.
func (r *run) tunnelClient(n node, tlsCfg *tls.Config) (*http.Client, error) {
	c, err := r.client(n)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: probeTimeout,
		Transport: &http.Transport{
			DialContext:       c.DialContext,
			TLSClientConfig:   tlsCfg,
			DisableKeepAlives: true,
		},
	}, nil
}

// clientTLS is a TLS config presenting the client certificate id, trusting
// the CA of kind ca, for a server named serverName.
func (r *run) clientTLS(id pki.ID, ca pki.Kind, serverName string) (*tls.Config, error) {
	b := r.snapshot().PKI
	if b == nil {
		return nil, fmt.Errorf("no certificates yet: the certificates step has not run")
	}
	cert, err := b.Get(id)
	if err != nil {
		return nil, err
	}
	if _, ok := b.CA(ca); !ok {
		return nil, fmt.Errorf("no %s certificate authority", ca)
	}
	return pki.ClientTLSConfig(cert, b.Trust(ca), serverName)
}

// httpDo sends one request and returns the body of a 2xx answer.
func httpDo(ctx context.Context, hc *http.Client, method, url, body string) ([]byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return b, &httpStatusError{Method: method, URL: url, Code: resp.StatusCode, Status: resp.Status, Body: strings.TrimSpace(string(b))}
	}
	return b, nil
}

// httpStatusError is a non-2xx answer of a component's HTTP endpoint; the
// code lets callers tell a refusal that passes (503) from a final one.
type httpStatusError struct {
	Method, URL string
	Code        int
	Status      string
	Body        string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.URL, e.Status, e.Body)
}

// isUnavailable reports whether err is a 503 answer: the component is up
// but refuses for now (etcd refuses a reconfiguration until every voting
// member has been connected for a few seconds).
func isUnavailable(err error) bool {
	var se *httpStatusError
	return errors.As(err, &se) && se.Code == http.StatusServiceUnavailable
}

// insecureLoopbackTLS is for components' own self-signed serving
// certificates on a node's 127.0.0.1, reached through the node's SSH
// connection: the bytes never cross a network, so there is nothing for a
// certificate check to protect.
func insecureLoopbackTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback on the node, see above
}
