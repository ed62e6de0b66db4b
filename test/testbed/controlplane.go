package testbed

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Control plane bounds.
const (
	// readyTimeout bounds a control plane start or restart. It is ready in
	// about 4 s on an idle 2-core machine; the rest is room for a CI machine
	// running several test binaries at once.
	readyTimeout = 60 * time.Second
	// probeTimeout bounds one /readyz request.
	probeTimeout = 2 * time.Second
)

// ControlPlaneOptions configures StartControlPlane. The zero value runs the
// control plane in the test's own namespaces on free loopback ports.
type ControlPlaneOptions struct {
	// Host, when set, runs every component inside that host: the API
	// server listens on the host's address, port 6443, so that kubelets on
	// other hosts reach it, and etcd on the host's own loopback.
	Host *Host
	// Scheduler also starts kube-scheduler. Without it, pods need
	// spec.nodeName.
	Scheduler bool
	// APIServerArgs are extra kube-apiserver flags (e.g. feature gates),
	// appended after the testbed's.
	APIServerArgs []string
}

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager
// (RBAC and Node authorization on, a CA and certificates generated in Go).
// Its methods may be called from any goroutine.
type ControlPlane struct {
	// URL is the API server's address, e.g. https://127.0.0.1:40123.
	URL string
	// CA is the PEM certificate of the cluster CA, which signed the
	// serving certificate and every client certificate.
	CA []byte
	// Kubeconfig authenticates as a member of system:masters with a
	// client certificate.
	Kubeconfig []byte
	// Token is a static bearer token of a system:masters member.
	Token string
	// Dir holds the PKI, kubeconfigs, etcd data and logs/.
	Dir string
	// Host is the host the control plane runs in, nil on loopback.
	Host *Host

	t                 testing.TB
	ca                *authority
	wrongCAKubeconfig []byte
	adminTLS          *tls.Config
	components        []component

	mu    sync.Mutex
	procs map[string]*process // by component name; nil until started
}

// component is one control plane process and how to start it.
type component struct {
	name   string
	binary string
	args   []string
	log    string
}

// StartControlPlane starts a control plane, waits until /readyz answers,
// and stops it in t.Cleanup (printing the end of every log when the test
// failed). It fails the test when the control plane does not come up within
// readyTimeout. It must be called from the test's goroutine.
func StartControlPlane(t testing.TB, opts ControlPlaneOptions) *ControlPlane {
	t.Helper()
	Require(t, NeedTestbin)
	start := time.Now()
	cp, err := newControlPlane(t, opts)
	if err != nil {
		t.Fatalf("testbed: control plane: %v", err)
	}
	t.Cleanup(cp.cleanup)
	cp.mu.Lock()
	err = cp.startLocked()
	cp.mu.Unlock()
	if err != nil {
		t.Fatalf("testbed: start control plane: %v", err)
	}
	t.Logf("testbed: control plane at %s ready in %s", cp.URL, time.Since(start).Round(time.Millisecond))
	return cp
}

// Stop stops every component, controller manager first, etcd last, each
// with SIGTERM and a bounded grace. Stopping twice is harmless; Restart
// starts it again.
func (cp *ControlPlane) Stop() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var procs []*process
	for _, c := range cp.components {
		procs = append(procs, cp.procs[c.name])
	}
	if err := stopAll(procs, stopGrace); err != nil {
		return fmt.Errorf("stop control plane %s: %w", cp.URL, err)
	}
	return nil
}

// Kill sends SIGKILL to kube-apiserver and waits for it to die, leaving
// etcd and the controller manager running: the abrupt loss of the API a
// client must survive. Requests fail until Restart.
func (cp *ControlPlane) Kill() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	p := cp.procs[componentAPIServer]
	if p == nil {
		return nil
	}
	if err := p.stop(0); err != nil {
		cp.t.Errorf("testbed: kill kube-apiserver: %v", err)
		return err
	}
	return nil
}

// Restart stops kube-apiserver if it runs, starts every component that is
// not running, and waits until the API server is ready again, on the same
// address, port and PKI, so existing kubeconfigs keep working. A failure is
// also reported on the test with Errorf, so a caller that ignores the error
// still fails.
func (cp *ControlPlane) Restart() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	start := time.Now()
	if p := cp.procs[componentAPIServer]; p != nil && !p.exited() {
		if err := p.stop(stopGrace); err != nil {
			cp.t.Errorf("testbed: restart control plane: %v", err)
			return err
		}
	}
	if err := cp.startLocked(); err != nil {
		cp.t.Errorf("testbed: restart control plane: %v", err)
		return err
	}
	cp.t.Logf("testbed: control plane at %s restarted in %s", cp.URL, time.Since(start).Round(time.Millisecond))
	return nil
}

// startLocked starts every component that is not running and waits for
// the API server's /readyz: etcd and the API server first, then, once the
// API server is ready (its RBAC roles bootstrapped), the components that
// act through it. A controller manager started with the API server may
// find its own permissions missing and exit (seen on a busy machine).
func (cp *ControlPlane) startLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for _, phase := range []func(name string) bool{
		func(name string) bool { return name == componentEtcd || name == componentAPIServer },
		func(string) bool { return true },
	} {
		for _, c := range cp.components {
			p := cp.procs[c.name]
			switch {
			case p != nil && !p.exited():
				continue
			case !phase(c.name):
				delete(cp.procs, c.name) // exited: not looked at until started again
				continue
			}
			p, err := startProcess(c.name, cp.command(c), c.log)
			if err != nil {
				return err
			}
			cp.procs[c.name] = p
		}
		if err := cp.waitReadyLocked(ctx); err != nil {
			return fmt.Errorf("%w: API server %s (log %s): %w", ErrNotReady, cp.URL, cp.procs[componentAPIServer].logPath, err)
		}
	}
	return nil
}

// command builds the command of one component, inside the host if any.
func (cp *ControlPlane) command(c component) *exec.Cmd {
	if cp.Host != nil {
		return cp.Host.command(c.binary, c.args...)
	}
	cmd := exec.Command(c.binary, c.args...)
	cmd.Env = hostEnv()
	return cmd
}

// maxComponentRestarts bounds how often waitReadyLocked starts again a
// component that exited while the control plane came up.
const maxComponentRestarts = 3

// waitReadyLocked polls /readyz with the admin certificate until it answers
// 200, etcd or the API server exits (another component exiting is started
// again, at most maxComponentRestarts times), or ctx ends.
func (cp *ControlPlane) waitReadyLocked(ctx context.Context) error {
	transport := &http.Transport{TLSClientConfig: cp.adminTLS, DisableKeepAlives: true}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: probeTimeout}
	restarts := 0
	return poll(ctx, func(ctx context.Context) error {
		for _, c := range cp.components {
			p := cp.procs[c.name]
			if p == nil || !p.exited() {
				continue
			}
			// A controller manager or scheduler that starts while the
			// API server's authorizer is still loading its RBAC roles
			// gets "forbidden" and exits (seen on a busy machine): a
			// supervisor starts it again, and so does the testbed, a
			// few times. etcd or the API server exiting is a failure.
			if c.name == componentEtcd || c.name == componentAPIServer || restarts >= maxComponentRestarts {
				return p.exitError()
			}
			restarts++
			np, err := startProcess(c.name, cp.command(c), c.log)
			if err != nil {
				return err
			}
			cp.procs[c.name] = np
			return fmt.Errorf("%s exited (%v); started again", c.name, p.exitError())
		}
		return getOK(ctx, client, cp.URL+"/readyz")
	})
}

// cleanup prints the logs of a failed test and stops everything.
func (cp *ControlPlane) cleanup() {
	if cp.t.Failed() {
		for _, c := range cp.components {
			cp.t.Logf("testbed: end of %s:\n%s", c.log, tailFile(c.log, logTailLines))
		}
	}
	if err := cp.Stop(); err != nil {
		cp.t.Errorf("testbed: %v", err)
	}
}

// newControlPlane writes the PKI, kubeconfigs and component flags to disk.
func newControlPlane(t testing.TB, opts ControlPlaneOptions) (*ControlPlane, error) {
	bin, err := Testbin()
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Host: opts.Host, t: t, procs: map[string]*process{}}
	var addr addresses
	if opts.Host != nil {
		cp.Dir = filepath.Join(opts.Host.Dir, "controlplane")
		addr = hostAddresses(opts.Host.Address)
	} else {
		cp.Dir = t.TempDir()
		if addr, err = loopbackAddresses(); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"pki", "logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(cp.Dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("create control plane directory: %w", err)
		}
	}
	cp.URL = fmt.Sprintf("https://%s", addr.apiServer())
	if err := cp.writePKI(addr); err != nil {
		return nil, err
	}
	cp.components = cp.componentsFor(bin, addr, opts)
	return cp, nil
}

// tlsConfig builds the admin client's TLS configuration.
func tlsConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load admin certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("load cluster CA: no certificate in PEM")
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
