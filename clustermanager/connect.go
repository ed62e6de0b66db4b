package clustermanager

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	kubecfg "github.com/zdnscloud/singlecloud/internal/kubeconfig"
)

// connected is what a successful connection attempt learned.
type connected struct {
	client  kubeclient.Interface
	version string
	nodes   int
}

// restConfig turns a stored kubeconfig into a client config through
// kubecfg.Parse, which refuses exec plugins, auth providers and file
// paths: a row saved before the API refused them goes Unavailable with the
// field to fix instead of acting on this host. A kubeconfig that cannot be
// used is a permanent failure: retrying will not fix it.
func restConfig(data []byte, timeout time.Duration) (*rest.Config, error) {
	cfg, err := kubecfg.Parse(data)
	if err != nil {
		return nil, &permanentError{reason: fmt.Sprintf("kubeconfig is not usable: %v; reconnect with a kubeconfig that embeds its certificates and credentials (kubectl config view --raw --flatten --minify)", err), err: err}
	}
	cfg.Timeout = timeout
	cfg.QPS = 50
	cfg.Burst = 100
	cfg.UserAgent = "singlecloud"
	return cfg, nil
}

// dial builds a client from cfg and proves it works by reading /version
// and counting nodes, within timeout.
func dial(ctx context.Context, cfg *rest.Config, timeout time.Duration) (connected, error) {
	client, err := kubeclient.NewForConfig(cfg)
	if err != nil {
		return connected{}, &permanentError{reason: kubecfg.RedactText(fmt.Sprintf("kubeconfig is not usable: %v", err)), err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return connected{}, classify(cfg.Host, err)
	}
	info, err := parseVersion(raw)
	if err != nil {
		return connected{}, redactedError{fmt.Errorf("read /version of %s: %w", cfg.Host, err)}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, listOne)
	if err != nil {
		return connected{}, classify(cfg.Host, err)
	}
	n := len(nodes.Items)
	if nodes.RemainingItemCount != nil {
		n += int(*nodes.RemainingItemCount)
	}
	return connected{client: client, version: info, nodes: n}, nil
}

// classify turns a failed request into a permanent error when retrying
// cannot help, with a reason that says what to fix. host names the
// cluster (its server URL or its name); the text of the result has every
// URL's credentials removed, so it can be stored as a reason and logged.
func classify(host string, err error) error {
	host = kubecfg.RedactURL(host)
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknownCA):
		return permanent(err, "%s: the server's certificate is not signed by the kubeconfig's certificate-authority-data (x509: unknown authority); import a kubeconfig with the cluster's CA", host)
	case errors.As(err, &hostname):
		return permanent(err, "%s: the server's certificate is not valid for this address (%v); use a server address listed in the certificate", host, hostname)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return permanent(err, "%s: the API server's certificate has expired (%v); rotate the cluster's certificates", host, invalid)
	case errors.As(err, &invalid):
		return permanent(err, "%s: the server's certificate is invalid (%v)", host, invalid)
	case apierrors.IsUnauthorized(err):
		return permanent(err, "%s: 401 Unauthorized: the kubeconfig's credentials (token or client certificate) were rejected; import a kubeconfig with valid credentials", host)
	case apierrors.IsForbidden(err):
		return permanent(err, "%s: 403 Forbidden: the kubeconfig's user may not read nodes; use an administrator's kubeconfig", host)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code == http.StatusNotFound {
		return permanent(err, "%s: not a Kubernetes API server (404)", host)
	}
	return redactedError{fmt.Errorf("%s: %w", host, err)}
}

// permanent builds a permanentError whose reason has every URL's
// credentials removed.
func permanent(err error, format string, args ...any) error {
	return &permanentError{err: err, reason: kubecfg.RedactText(fmt.Sprintf(format, args...))}
}

// redactedError shows its error's text with every URL's credentials
// removed (kubecfg.RedactText), for reasons and logs; errors.Is/As see
// the error itself.
type redactedError struct{ err error }

func (e redactedError) Error() string { return kubecfg.RedactText(e.err.Error()) }

// Unwrap exposes the wrapped error.
func (e redactedError) Unwrap() error { return e.err }

// dialKubeconfig connects with a kubeconfig (see dial).
func dialKubeconfig(ctx context.Context, kubeconfig []byte, timeout time.Duration) (connected, error) {
	cfg, err := restConfig(kubeconfig, timeout)
	if err != nil {
		return connected{}, err
	}
	return dial(ctx, cfg, timeout)
}

// runConnect is the run of an import or reconnect, the initLoop of an
// imported cluster: it retries transient failures with capped backoff
// until the cluster answers (succeeded), a permanent failure (failed, with
// the reason) or ctx ends (cancel, delete or shutdown).
func (m *Manager) runConnect(ctx context.Context, e *entry, _ *opRun) outcome {
	// Parsing a kubeconfig is CPU-bound: it takes a parse slot, so that
	// a start-up with thousands of clusters to reconnect leaves CPUs to
	// serving the API.
	var cfg *rest.Config
	err := withSlot(ctx, m.parseSem, func() (err error) {
		cfg, err = restConfig(e.record().secrets.Kubeconfig, m.opts.ProbeTimeout)
		return err
	})
	if err != nil {
		return outcome{err: err}
	}
	backoff := m.opts.BackoffInitial
	for attempt := 1; ; attempt++ {
		res, err := m.connectOnce(ctx, cfg)
		if ctx.Err() != nil {
			return outcome{err: ctx.Err()}
		}
		if err == nil {
			e.setClient(res.client)
			e.setLastErr("")
			return outcome{edit: func(r *record) { r.Version, r.NodeCount = res.version, res.nodes }}
		}
		if errors.Is(err, ErrPermanent) {
			return outcome{err: err}
		}
		shown := kubecfg.RedactText(err.Error())
		e.setLastErr(fmt.Sprintf("attempt %d: %s; retrying in %s", attempt, shown, backoff))
		m.log.Info("cluster not reachable yet", "cluster", e.name, "attempt", attempt, "err", shown, "retryIn", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return outcome{err: ctx.Err()}
		case <-t.C:
		}
		backoff = min(2*backoff, m.opts.BackoffMax)
	}
}

// connectOnce makes one bounded attempt, holding a connect slot.
func (m *Manager) connectOnce(ctx context.Context, cfg *rest.Config) (res connected, err error) {
	err = withSlot(ctx, m.connSem, func() (err error) {
		res, err = dial(ctx, rest.CopyConfig(cfg), m.opts.ProbeTimeout)
		return err
	})
	return res, err
}

// withSlot runs fn holding one slot of sem, or returns ctx's error if
// ctx ends first.
func withSlot(ctx context.Context, sem chan struct{}, fn func() error) error {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-sem }()
	return fn()
}
