package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// echoServer answers each line with "echo: <line>" on l until the test
// ends.
func echoServer(t *testing.T, l net.Listener) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				sc := bufio.NewScanner(conn)
				for sc.Scan() {
					fmt.Fprintf(conn, "echo: %s\n", sc.Text())
				}
			}()
		}
	}()
	t.Cleanup(func() { l.Close(); wg.Wait() })
}

// roundTrip sends one line on conn and returns the reply line.
func roundTrip(t *testing.T, conn net.Conn, line string) string {
	t.Helper()
	if _, err := fmt.Fprintf(conn, "%s\n", line); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(reply, "\n")
}

func TestDialContext(t *testing.T) {
	testbed.Require(t, testbed.NeedBusybox)
	h := startHosts(t, 1)[0]
	c := dialHost(t, h, fastOptions())
	ctx := testContext(t)

	// A unix socket the test serves, at a path inside the host (the
	// host's directory is at the same path inside and outside).
	sock := filepath.Join(h.Dir, "echo.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ul)
	// A TCP port the test serves on the bridge, reached from the host.
	tl, err := net.Listen("tcp", net.JoinHostPort(h.Gateway, "0"))
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, tl)
	// A TCP echo server inside the host, reached on its loopback as
	// component health endpoints are.
	if _, err := h.Start("busybox", "nc", "-ll", "-p", "18080", "-e", "/bin/cat"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "busybox nc did not listen", func() bool {
		conn, err := c.DialContext(ctx, "tcp", "127.0.0.1:18080")
		if err == nil {
			conn.Close()
		}
		return err == nil
	})

	tests := []struct {
		name, network, addr, want string
	}{
		{name: "unix socket", network: "unix", addr: sock, want: "echo: hello"},
		{name: "tcp to the bridge", network: "tcp", addr: tl.Addr().String(), want: "echo: hello"},
		{name: "tcp to the node's loopback", network: "tcp", addr: "127.0.0.1:18080", want: "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := c.DialContext(ctx, tt.network, tt.addr)
			if err != nil {
				t.Fatalf("DialContext: %v", err)
			}
			defer conn.Close()
			if got := roundTrip(t, conn, "hello"); got != tt.want {
				t.Fatalf("reply %q, want %q", got, tt.want)
			}
		})
	}

	failures := []struct {
		name, network, addr, wantHint string
		want                          error
	}{
		{name: "closed tcp port", network: "tcp", addr: "127.0.0.1:1", want: ErrForward, wantHint: "nothing accepts connections on 127.0.0.1:1 on " + h.Name},
		{name: "missing socket", network: "unix", addr: "/run/nothing.sock", want: ErrForward, wantHint: "/run/nothing.sock does not exist on " + h.Name},
		{name: "not a socket", network: "unix", addr: "/etc/hostname", want: ErrForward, wantHint: "is not a socket"},
		{name: "unsupported network", network: "udp", addr: "127.0.0.1:53", wantHint: "only tcp and unix"},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := c.DialContext(ctx, tt.network, tt.addr)
			if err == nil {
				conn.Close()
				t.Fatal("DialContext succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("DialContext = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantHint) {
				t.Errorf("error %q lacks %q", err, tt.wantHint)
			}
		})
	}

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.DialContext(ctx, "unix", sock); !errors.Is(err, context.Canceled) {
			t.Fatalf("DialContext = %v, want context.Canceled", err)
		}
	})

	t.Run("closing the client ends tunnels", func(t *testing.T) {
		c2 := dialHost(t, h, fastOptions())
		conn, err := c2.DialContext(ctx, "unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c2.Close()
		done := make(chan error, 1)
		go func() { _, err := io.ReadAll(conn); done <- err }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a tunnel outlived its client")
		}
	})
}
