package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/crypto/ssh"
)

// Client is one authenticated SSH connection to a node. Its methods may be
// called from any goroutine. It closes itself when the connection dies
// (Done is closed, Err says why); its owner must call Close, which stops
// every goroutine it started.
type Client struct {
	target  Target
	opts    Options
	conn    *ssh.Client
	hostKey ssh.PublicKey

	// sessions bounds the sessions open at once (maxSessions).
	sessions chan struct{}

	done      chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	err       error // why the client closed; set once, before done is closed
	wg        sync.WaitGroup

	// cancel steers how Exec kills a cancelled command; tests switch off
	// one mechanism to check that the others suffice.
	cancel cancelMechanisms
}

// cancelMechanisms are the ways Exec stops a remote command; all are on in
// production.
type cancelMechanisms struct {
	noSignal bool // do not send the "signal" request
	noScan   bool // do not run the kill session
}

// newClient wraps an authenticated connection and starts its watcher and
// keepalive goroutines.
func newClient(t Target, opts Options, conn *ssh.Client, hostKey ssh.PublicKey) *Client {
	c := &Client{
		target:   t,
		opts:     opts,
		conn:     conn,
		hostKey:  hostKey,
		sessions: make(chan struct{}, maxSessions),
		done:     make(chan struct{}),
	}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		if err := conn.Wait(); err != nil {
			c.shutdown(fmt.Errorf("%w: %w", ErrConnectionLost, err))
		} else {
			c.shutdown(ErrConnectionLost)
		}
	}()
	go func() {
		defer c.wg.Done()
		c.keepalive()
	}()
	return c
}

// Node returns the node's name.
func (c *Client) Node() string { return c.target.Node }

// Address returns the node's host:port.
func (c *Client) Address() string { return c.target.hostPort() }

// HostKey returns the host key the node presented, in authorized_keys
// format: the value to pin in Target.HostKey for every later connection.
func (c *Client) HostKey() string { return FormatHostKey(c.hostKey) }

// Done is closed when the client has closed, by Close or because the
// connection died.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil while the client is open, then why it closed: ErrClosed
// after Close, or an ErrConnectionLost error.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection and waits until every goroutine of the
// client has stopped. Operations in progress fail with ErrClosed. It is
// idempotent and always returns nil.
func (c *Client) Close() error {
	c.shutdown(ErrClosed)
	c.wg.Wait()
	return nil
}

// shutdown records why the client closes and closes the connection,
// without waiting; only the first call has an effect.
func (c *Client) shutdown(cause error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = cause
		c.mu.Unlock()
		close(c.done)
		c.conn.Close()
	})
}

// spawn runs fn in a goroutine owned by the client: Close waits for it.
// Once the client is closed it runs nothing and returns false.
func (c *Client) spawn(fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		fn()
	}()
	return true
}

// nodeError wraps err as a *NodeError of operation op on this node.
func (c *Client) nodeError(op string, err error, hint string) *NodeError {
	return &NodeError{Node: c.target.Node, Address: c.target.hostPort(), Op: op, Err: err, Hint: hint}
}

// closedError explains an operation that failed because the client is
// closed or its connection died.
func (c *Client) closedError(op string) error {
	err := c.Err()
	if err == nil {
		err = ErrConnectionLost
	}
	hint := ""
	if !errors.Is(err, ErrClosed) {
		hint = fmt.Sprintf("check that %s is up; the next operation reconnects", c.target.Node)
	}
	return c.nodeError(op, err, hint)
}

// acquireSession waits for a free session slot, at most until ctx ends or
// the client closes; the caller must call the returned release.
func (c *Client) acquireSession(ctx context.Context, op string) (func(), error) {
	select {
	case c.sessions <- struct{}{}:
		return func() { <-c.sessions }, nil
	case <-ctx.Done():
		return nil, c.nodeError(op, ctx.Err(), "")
	case <-c.done:
		return nil, c.closedError(op)
	}
}

// newSession opens a session, explaining a failure by the client's state.
func (c *Client) newSession(op string) (*ssh.Session, error) {
	s, err := c.conn.NewSession()
	if err != nil {
		select {
		case <-c.done:
			return nil, c.closedError(op)
		default:
		}
		return nil, c.nodeError(op, fmt.Errorf("open ssh session: %w", err),
			fmt.Sprintf("sshd on %s refused a new session: check MaxSessions in its sshd_config", c.target.Node))
	}
	return s, nil
}
