package clustermanager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// errShuttingDown refuses work added after the manager began to stop.
var errShuttingDown = errors.New("singlecloud is shutting down")

// workQueue runs each cluster's work one item at a time, in the order it
// was added, on a worker of the cluster's own — client-go's workqueue
// rule: a key is never processed by two workers at once. A worker exists
// while its key has work and ends when the key's queue is empty.
//
// Everything that changes a cluster is an item: the transition that starts
// an operation, the operation's run, the outcome of a cancel, a health
// transition, an admin edit. A client that sees a settled state can act on
// it at once: its item waits at most for the tail of the item that
// settled it. The queue holds the running item's cancel function, so that
// an interrupting request (cancel, delete) stops it.
type workQueue struct {
	root context.Context
	wg   sync.WaitGroup

	mu   sync.Mutex
	keys map[string]*keyQueue
	// added, when set (unit tests only), is called with the key and the
	// name of each item added and the key's number of waiting items,
	// under mu.
	added func(key, name string, waiting int)
}

// keyQueue is one key's running item and the items waiting behind it.
type keyQueue struct {
	running *workItem
	pending []*workItem
}

// Item states: an item waiting may be abandoned by its waiter (do) and
// then never runs.
const (
	itemQueued int32 = iota
	itemRunning
	itemAbandoned
)

// workItem is one unit of a key's work.
type workItem struct {
	name string // for messages: "create", "settle cancel", "forget host key"
	// interruptible items are an operation's run: an interrupting
	// request cancels them, whether running or still waiting.
	interruptible bool
	run           func(ctx context.Context)
	ctx           context.Context
	cancel        context.CancelFunc
	done          chan struct{}
	state         atomic.Int32
}

func newWorkQueue(root context.Context) *workQueue {
	return &workQueue{root: root, keys: map[string]*keyQueue{}}
}

// add queues run as key's last item. It fails once the root context has
// ended. An operation's run is queued by the item that fired its start
// event; items queued between the two find the cluster busy and are
// refused by its state machine, or interrupt the run.
func (q *workQueue) add(key, name string, interruptible bool, run func(ctx context.Context)) (*workItem, error) {
	ctx, cancel := context.WithCancel(q.root)
	it := &workItem{name: name, interruptible: interruptible, run: run, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.root.Err() != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", name, errShuttingDown)
	}
	kq, ok := q.keys[key]
	if !ok {
		kq = &keyQueue{}
		q.keys[key] = kq
		q.wg.Add(1)
		go q.work(key, kq)
	}
	kq.pending = append(kq.pending, it)
	if q.added != nil {
		q.added(key, name, len(kq.pending))
	}
	return it, nil
}

// work is key's worker: it runs the key's items until none is left.
func (q *workQueue) work(key string, kq *keyQueue) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		if len(kq.pending) == 0 {
			kq.running = nil
			delete(q.keys, key)
			q.mu.Unlock()
			return
		}
		it := kq.pending[0]
		kq.pending = kq.pending[1:]
		kq.running = it
		q.mu.Unlock()
		if it.state.CompareAndSwap(itemQueued, itemRunning) {
			it.run(it.ctx)
		}
		it.cancel()
		close(it.done)
	}
}

// do runs fn as key's next item and returns its error. If ctx ends while
// the item still waits, the item is dropped and ctx's error returned; once
// fn has begun, do waits for it (fn's own waits are bounded).
func (q *workQueue) do(ctx context.Context, key, name string, fn func(ctx context.Context) error) error {
	var err error
	it, aerr := q.add(key, name, false, func(ictx context.Context) { err = fn(ictx) })
	if aerr != nil {
		return aerr
	}
	select {
	case <-it.done:
		return err
	case <-ctx.Done():
		if it.state.CompareAndSwap(itemQueued, itemAbandoned) {
			return fmt.Errorf("%s: waiting for the cluster's running work: %w", name, ctx.Err())
		}
		<-it.done
		return err
	}
}

// interrupt cancels key's running item if it is interruptible, and every
// interruptible item waiting: an operation's run that was about to begin
// then sees its context ended and stops at once. It returns the name of
// the item it found running ("" for none).
func (q *workQueue) interrupt(key string) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	kq, ok := q.keys[key]
	if !ok {
		return ""
	}
	for _, it := range kq.pending {
		if it.interruptible {
			it.cancel()
		}
	}
	if kq.running == nil {
		return ""
	}
	if kq.running.interruptible {
		kq.running.cancel()
	}
	return kq.running.name
}

// busy reports whether key has an item running or waiting.
func (q *workQueue) busy(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.keys[key]
	return ok
}

// wait returns once every worker has ended. Call it after the root
// context has ended: workers then run what is left with ended contexts,
// which makes operations stop at once.
func (q *workQueue) wait() { q.wg.Wait() }
