package zke

import (
	"context"
	"crypto/tls"
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
	caCert, ok := b.CA(ca)
	if !ok {
		return nil, fmt.Errorf("no %s certificate authority", ca)
	}
	return pki.ClientTLSConfig(cert, caCert.Cert, serverName)
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
		return b, fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, strings.TrimSpace(string(b)))
	}
	return b, nil
}

// insecureLoopbackTLS is for components' own self-signed serving
// certificates on a node's 127.0.0.1, reached through the node's SSH
// connection: the bytes never cross a network, so there is nothing for a
// certificate check to protect.
func insecureLoopbackTLS() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback on the node, see above
}
