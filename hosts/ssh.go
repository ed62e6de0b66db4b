package hosts

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/zdnscloud/singlecloud/hosts/sysinfo"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// sshProber probes over SSH with zke's transport: one connect attempt
// (the probe loop retries on its next sweep), its TCP connect and its SSH
// handshake each bounded by half the probe's timeout, so that the
// transport says which of them failed, with a hint, before the probe's
// own deadline; the host key pinned once seen.
type sshProber struct{ timeout time.Duration }

// dial logs in to t with one bounded attempt, pinning its host key when
// one is known; output of commands is capped at maxOutput.
func (p sshProber) dial(ctx context.Context, t Target, maxOutput int) (*transport.Client, error) {
	signer, err := transport.ParsePrivateKey(t.Key)
	if err != nil {
		return nil, fmt.Errorf("the registered SSH key cannot be used: %w; register the key again", err)
	}
	d, err := transport.NewDialer(transport.Options{DialTimeout: p.timeout / 2, HandshakeTimeout: p.timeout / 2, DialAttempts: 1, MaxOutput: maxOutput})
	if err != nil {
		return nil, err
	}
	return d.Dial(ctx, transport.Target{Node: t.Name, Address: t.Address, Port: t.Port, User: t.User, Signer: signer, HostKey: t.HostKey})
}

// Exec implements Executor.
func (p sshProber) Exec(ctx context.Context, t Target, cmd string) (transport.ExecResult, error) {
	return p.ExecStream(ctx, t, cmd, nil, nil)
}

// ExecStream implements StreamExecutor with the transport's output taps,
// so that a streamed command gets the transport's kill on cancel, host
// key pinning and error classes like any other; the result is capped at
// maxOutputBytes per stream, as the record keeps it.
func (p sshProber) ExecStream(ctx context.Context, t Target, cmd string, stdout, stderr io.Writer) (transport.ExecResult, error) {
	c, err := p.dial(ctx, t, maxOutputBytes)
	if err != nil {
		return transport.ExecResult{}, err
	}
	defer c.Close()
	return c.Exec(ctx, cmd, transport.ExecOptions{Stdout: stdout, Stderr: stderr})
}

// Probe implements Prober.
func (p sshProber) Probe(ctx context.Context, t Target, collect bool) (ProbeResult, error) {
	c, err := p.dial(ctx, t, sysinfo.MaxOutputBytes)
	if err != nil {
		return ProbeResult{}, err
	}
	defer c.Close()
	res := ProbeResult{HostKey: c.HostKey()}
	if !collect {
		return res, nil
	}
	sent := time.Now()
	out, err := c.Exec(ctx, sysinfo.Script, transport.ExecOptions{})
	if err != nil {
		res.InfoError = err
		return res, nil
	}
	info := sysinfo.Parse(out.Stdout, sent, time.Now())
	res.Info = &info
	return res, nil
}
