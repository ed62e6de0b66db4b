package transport

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestPool(t *testing.T) {
	hosts := startHosts(t, 2)
	ctx := testContext(t)
	p, err := NewPool(fastOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t1, t2 := targetFor(t, hosts[0]), targetFor(t, hosts[1])

	// Concurrent Gets for one node share one client.
	clients := make([]*Client, 10)
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			clients[i], errs[i] = p.Get(ctx, t1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients[1:] {
		if c != clients[0] {
			t.Fatal("concurrent Gets dialed more than one client")
		}
	}
	c1 := clients[0]
	if c1.Node() != hosts[0].Name {
		t.Fatalf("client of %s for %s", c1.Node(), hosts[0].Name)
	}

	// Another node has its own client.
	c2, err := p.Get(ctx, t2)
	if err != nil {
		t.Fatal(err)
	}
	if c2 == c1 || c2.Node() != hosts[1].Name {
		t.Fatal("two nodes share a client")
	}
	if res, err := c2.Exec(ctx, "hostname", ExecOptions{}); err != nil || string(res.Stdout) != hosts[1].Name+"\n" {
		t.Fatalf("Exec on %s: %q, %v", hosts[1].Name, res.Stdout, err)
	}

	// A dead client is replaced.
	c1.Close()
	again, err := p.Get(ctx, t1)
	if err != nil {
		t.Fatal(err)
	}
	if again == c1 || again.Err() != nil {
		t.Fatal("Get returned the dead client")
	}

	// A changed target (now pinned) gets a new client; the old is closed.
	pinned := t1
	pinned.HostKey = again.HostKey()
	third, err := p.Get(ctx, pinned)
	if err != nil {
		t.Fatal(err)
	}
	if third == again || again.Err() == nil {
		t.Fatal("a changed target reused the old client")
	}
	if same, _ := p.Get(ctx, pinned); same != third {
		t.Fatal("an unchanged target did not reuse the client")
	}

	// A failing dial is reported to its caller and not cached.
	wrong := t2
	wrong.HostKey = FormatHostKey(testSigner(t).PublicKey())
	if _, err := p.Get(ctx, wrong); !errors.Is(err, ErrHostKeyMismatch) {
		t.Fatalf("Get with a wrong pin = %v", err)
	}
	if c, err := p.Get(ctx, t2); err != nil || c.Err() != nil {
		t.Fatalf("Get after a failed dial = %v", err)
	}

	// A cancelled caller gets its context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	p.Remove(hosts[1].Name)
	if _, err := p.Get(cctx, t2); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v", err)
	}

	// Close closes every client and refuses later Gets.
	p.Close()
	if third.Err() == nil {
		t.Error("Pool.Close left a client open")
	}
	if _, err := p.Get(ctx, t1); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
}
