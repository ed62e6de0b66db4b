package transport

import (
	"fmt"
	"time"
)

// keepaliveRequest is OpenSSH's name for a global request that exists only
// to be answered (any reply, even a failure, proves the peer is alive).
const keepaliveRequest = "keepalive@openssh.com"

// keepalive sends a keepalive request every KeepaliveInterval until the
// client closes. A request not answered within KeepaliveTimeout closes the
// client with ErrConnectionLost: the peer is dead or the network is cut,
// and every operation waiting on the connection is released. It returns
// when the client is closed.
func (c *Client) keepalive() {
	ticker := time.NewTicker(c.opts.KeepaliveInterval)
	defer ticker.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ticker.C:
		}
		timeout := c.opts.KeepaliveTimeout
		fired := make(chan struct{})
		timer := time.AfterFunc(timeout, func() {
			defer close(fired)
			c.shutdown(fmt.Errorf("%w: no keepalive reply from %s within %s", ErrConnectionLost, c.target.Node, timeout))
		})
		_, _, err := c.conn.SendRequest(keepaliveRequest, true, nil)
		if !timer.Stop() {
			<-fired // the timeout fired: let its shutdown finish before returning
		}
		if err != nil {
			c.shutdown(fmt.Errorf("%w: keepalive: %w", ErrConnectionLost, err))
			return
		}
	}
}
