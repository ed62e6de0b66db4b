package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/crypto/ssh"
)

// Dialer connects to nodes with one set of Options. It is safe for
// concurrent use.
type Dialer struct {
	opts Options
}

// NewDialer validates opts and fills its defaults.
func NewDialer(opts Options) (*Dialer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Dialer{opts: o}, nil
}

// Dial connects to t with the default Options; see (*Dialer).Dial.
func Dial(ctx context.Context, t Target) (*Client, error) {
	d, err := NewDialer(Options{})
	if err != nil {
		return nil, err
	}
	return d.Dial(ctx, t)
}

// Dial connects and authenticates to t, trying up to DialAttempts times
// while the failure may be transient (unreachable, handshake) with a capped
// backoff between attempts. It blocks at most about DialAttempts ×
// (DialTimeout + HandshakeTimeout) plus the backoffs, and returns as soon as
// ctx ends with an error matching ctx.Err(). Authentication failures and
// host key mismatches are not retried. The caller owns the returned client
// and must Close it.
func (d *Dialer) Dial(ctx context.Context, t Target) (*Client, error) {
	t, err := t.normalized()
	if err != nil {
		return nil, err
	}
	pin, err := newHostKeyPin(t)
	if err != nil {
		return nil, err
	}
	backoff := d.opts.RetryBackoff
	var lastErr error
	for attempt := 1; ; attempt++ {
		c, err := d.attempt(ctx, t, pin)
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			if errors.Is(err, ctx.Err()) {
				return nil, err
			}
			return nil, ctxError(t, "connect", ctx, lastErr)
		}
		if !retryable(err) || attempt >= d.opts.DialAttempts {
			var ne *NodeError
			if attempt > 1 && errors.As(err, &ne) {
				ne.Op = fmt.Sprintf("connect (%d attempts)", attempt)
			}
			return nil, err
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctxError(t, "connect", ctx, lastErr)
		case <-timer.C:
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// attempt makes one TCP connection and SSH handshake. The handshake runs
// under a connection deadline (HandshakeTimeout), which ctx cancellation
// brings forward; the deadline is cleared once authenticated.
func (d *Dialer) attempt(ctx context.Context, t Target, pin *hostKeyPin) (*Client, error) {
	nd := net.Dialer{Timeout: d.opts.DialTimeout}
	conn, err := nd.DialContext(ctx, "tcp", t.hostPort())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(t, "connect", ctx, nil)
		}
		return nil, classifyDial(t, d.opts.DialTimeout.String(), err)
	}
	if err := conn.SetDeadline(time.Now().Add(d.opts.HandshakeTimeout)); err != nil {
		conn.Close()
		return nil, classifyDial(t, d.opts.DialTimeout.String(), err)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	config := &ssh.ClientConfig{
		User:              t.User,
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(t.Signer)},
		HostKeyCallback:   pin.check,
		HostKeyAlgorithms: pin.algorithms(),
	}
	sshConn, chans, reqs, err := ssh.NewClientConn(conn, t.hostPort(), config)
	stopped := stop()
	if err != nil {
		// NewClientConn has closed conn.
		if ctx.Err() != nil {
			return nil, ctxError(t, "connect", ctx, nil)
		}
		return nil, classifyHandshake(t, pin, d.opts.HandshakeTimeout.String(), err)
	}
	if !stopped || conn.SetDeadline(time.Time{}) != nil {
		sshConn.Close()
		if ctx.Err() != nil {
			return nil, ctxError(t, "connect", ctx, nil)
		}
		return nil, &NodeError{Node: t.Node, Address: t.hostPort(), Op: "connect", Err: errors.Join(ErrHandshake, ErrConnectionLost)}
	}
	return newClient(t, d.opts, ssh.NewClient(sshConn, chans, reqs), pin.accepted()), nil
}
