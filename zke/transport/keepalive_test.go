package transport

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A node that stops answering (its sshd frozen: TCP still up, nothing
// read) is noticed by the keepalive, and the client closes.
func TestKeepaliveClosesOnDeadPeer(t *testing.T) {
	h := startHosts(t, 1)[0]
	opts := fastOptions()
	opts.KeepaliveInterval = 100 * time.Millisecond
	opts.KeepaliveTimeout = 300 * time.Millisecond
	c := dialHost(t, h, opts)
	ctx := testContext(t)

	// Stay alive while idle for several intervals.
	time.Sleep(5 * opts.KeepaliveInterval)
	if err := c.Err(); err != nil {
		t.Fatalf("an idle live client closed: %v", err)
	}

	// The sshd processes serving this connection: the command's sshd
	// ancestors but the topmost, which is the listener.
	res, err := c.Exec(ctx, `p=$$; while [ "$p" -gt 1 ]; do `+
		`[ "$(cat /proc/$p/comm)" = sshd ] && echo $p; p=$(cut -d' ' -f4 /proc/$p/stat); done`, ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(res.Stdout)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			t.Fatalf("sshd pids %q", res.Stdout)
		}
		pids = append(pids, pid)
	}
	if len(pids) < 2 {
		t.Fatalf("sshd ancestors %v: want the connection's and the listener", pids)
	}
	pids = pids[:len(pids)-1]
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	}

	start := time.Now()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not notice the dead peer")
	}
	if elapsed := time.Since(start); elapsed > opts.KeepaliveInterval+opts.KeepaliveTimeout+time.Second {
		t.Errorf("dead peer noticed after %s", elapsed)
	}
	if err := c.Err(); !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "keepalive") {
		t.Errorf("Err() = %v, want ErrConnectionLost from the keepalive", err)
	}
	_, err = c.Exec(ctx, "true", ExecOptions{})
	if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), h.Name) {
		t.Errorf("Exec on a dead client = %v, want ErrConnectionLost naming the node", err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.DialContext(cctx, "tcp", "127.0.0.1:22"); !errors.Is(err, ErrConnectionLost) {
		t.Errorf("DialContext on a dead client = %v, want ErrConnectionLost", err)
	}
}
