package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Defaults for Options.
const (
	// DefaultSocket is where dockerd listens on a stock installation.
	DefaultSocket = "/var/run/docker.sock"
	// DefaultTimeout bounds one non-streaming API call (inspect, create,
	// start, remove, list, logs). Each is a few milliseconds on a healthy
	// daemon; force-removing a container waits for it to die and a busy
	// daemon over a slow SSH link can take seconds, so 30 s leaves ample
	// room while a wedged daemon is still reported well within a step.
	DefaultTimeout = 30 * time.Second
	// cleanupTimeout bounds killing and removing a job container after the
	// caller's context ended: a SIGKILL and a delete, a few seconds at most.
	cleanupTimeout = 15 * time.Second
	// idleConnTimeout closes kept-alive connections nobody reuses, so that
	// an SSH channel is not held open for nothing.
	idleConnTimeout = 30 * time.Second
)

// Dialer opens a connection to the Docker socket. network is "unix" and
// addr the socket path; in production it is an SSH client that dials the
// node's socket, in tests a net.Dialer. It must honour ctx.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Options configures a Docker.
type Options struct {
	// Node names the node in errors and logs ("node1"); defaults to
	// "the node".
	Node string
	// Cluster is the cluster whose containers this Docker manages: the
	// io.zke.cluster label of the containers Ensure and RunJob create
	// (a ContainerSpec.Cluster overrides it) and the only cluster whose
	// containers Remove accepts. Empty lets Remove accept any zke container.
	Cluster string
	// Logger receives debug lines (calls, pull progress); nil discards.
	Logger *slog.Logger
	// Timeout bounds each non-streaming call (DefaultTimeout).
	Timeout time.Duration
}

// Docker drives the Docker daemon of one node. It is safe for concurrent
// use. Close releases its idle connections.
type Docker struct {
	node    string
	socket  string
	cluster string
	timeout time.Duration
	log     *slog.Logger
	http    *http.Client
	tr      *http.Transport

	negotiating chan struct{} // a one-slot semaphore: one negotiation at a time
	mu          sync.Mutex
	api         apiVersion // zero until negotiated
}

// New returns a Docker that reaches the daemon's socket (DefaultSocket when
// empty) through d. It does not connect: the first call does, negotiating
// the API version. opts.Timeout must not be negative.
func New(d Dialer, socket string, opts Options) (*Docker, error) {
	if d == nil {
		return nil, errors.New("runtime: New: a Dialer is required")
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("runtime: New: negative Timeout %s", opts.Timeout)
	}
	if socket == "" {
		socket = DefaultSocket
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Node == "" {
		opts.Node = "the node"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Cluster != "" {
		if err := validLabelValue("cluster", opts.Cluster); err != nil {
			return nil, fmt.Errorf("runtime: New: %w", err)
		}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns:        4,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     idleConnTimeout,
		DisableCompression:  true,
	}
	return &Docker{
		node:    opts.Node,
		socket:  socket,
		cluster: opts.Cluster,
		timeout: opts.Timeout,
		log:     opts.Logger.With("node", opts.Node),
		http:    &http.Client{Transport: tr},
		tr:      tr,

		negotiating: make(chan struct{}, 1),
	}, nil
}

// Close closes the idle connections to the daemon. Calls in flight are not
// interrupted (their contexts bound them); the Docker stays usable.
func (c *Docker) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// Node returns the node name used in errors.
func (c *Docker) Node() string { return c.node }

// withTimeout bounds a non-streaming call.
func (c *Docker) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}
