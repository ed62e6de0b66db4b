package fsm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	looplab "github.com/looplab/fsm"
)

// Transition is one accepted state change, as given to the Hooks. P is the
// owner's payload type: what a transition means for the owner's record.
type Transition[P any] struct {
	Cluster string
	Event   Event
	From    State
	To      State
	// Payload is what the caller passed to Fire (e.g. the edit of the
	// stored record); the machine does not look at it.
	Payload P
}

// Hooks is how the owner of a Machine (clustermanager) makes transitions
// durable and visible. Both run synchronously inside Fire, while the
// Machine's lock is held: they must not call Fire on the same Machine.
type Hooks[P any] interface {
	// Persist saves the transition before the state moves. A non-nil
	// error cancels the transition: the state stays at t.From and Fire
	// returns the error, wrapped. ctx is the one given to Fire.
	Persist(ctx context.Context, t Transition[P]) error
	// Announce publishes the transition after the state has moved to
	// t.To. It cannot fail the transition, which is already durable.
	Announce(t Transition[P])
}

// Machine is one cluster's state machine. It is safe for concurrent use;
// Fire calls are serialized. P is the type of the payload Fire carries to
// the hooks.
type Machine[P any] struct {
	cluster string
	hooks   Hooks[P]
	allowed map[edge]State // the table, shared by every machine; read-only
	initial State

	mu sync.Mutex // serializes Fire
	// f is the looplab machine, made by the first Fire: until then the
	// state is initial. A reload of thousands of clusters, most of which
	// never change state, does not pay for building it.
	f atomic.Pointer[looplab.FSM]
}

// edge is an (event, source state) pair of the table.
type edge struct {
	event Event
	from  State
}

// fireArgs travels to the callbacks through looplab's event arguments.
type fireArgs[P any] struct {
	ctx     context.Context
	payload P
}

// newStateName is looplab's name for StateNew. StateNew is "", and looplab
// files the callback for leaving state "" under the key of leave_state
// (every state), which would then run twice.
const newStateName = "(new)"

// New returns the machine of cluster in state initial: StateNew for a new
// cluster, or the persisted state when reloading. A state outside States()
// allows no event.
func New[P any](cluster string, initial State, hooks Hooks[P]) *Machine[P] {
	return &Machine[P]{cluster: cluster, hooks: hooks, allowed: allowedTable(), initial: initial}
}

// allowedTable is Transitions() as (event, source) → destination. It is
// built once and never changed.
var allowedTable = sync.OnceValue(func() map[edge]State {
	allowed := make(map[edge]State)
	for _, r := range Transitions() {
		for _, src := range r.Sources {
			allowed[edge{r.Event, src}] = r.Dst
		}
	}
	return allowed
})

// looplabMachine returns the looplab machine, making it in the current
// state on first use. The caller holds m.mu.
func (m *Machine[P]) looplabMachine() *looplab.FSM {
	if f := m.f.Load(); f != nil {
		return f
	}
	var events looplab.Events
	for _, r := range Transitions() {
		desc := looplab.EventDesc{Name: string(r.Event), Dst: toLooplab(r.Dst)}
		for _, src := range r.Sources {
			desc.Src = append(desc.Src, toLooplab(src))
		}
		events = append(events, desc)
	}
	f := looplab.NewFSM(toLooplab(m.initial), events, looplab.Callbacks{
		"leave_state": func(_ context.Context, e *looplab.Event) { m.persist(e) },
		"enter_state": func(_ context.Context, e *looplab.Event) { m.announce(e) },
	})
	m.f.Store(f)
	return f
}

// Fire applies ev: if the current state allows it, Hooks.Persist runs, then
// the state moves and Hooks.Announce runs. It returns an error wrapping
// ErrInvalidTransition (a *TransitionError) if the state refuses ev, ctx's
// error if ctx is already done, and Persist's error (wrapped) if Persist
// fails; in all three cases the state is unchanged and Announce is not
// called. Once Persist has succeeded the transition completes even if ctx
// is cancelled meanwhile, so the saved and the in-memory state agree.
// Fire blocks while another Fire on the same Machine runs.
func (m *Machine[P]) Fire(ctx context.Context, ev Event, payload P) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	from := m.Current()
	to, ok := m.allowed[edge{ev, from}]
	if !ok {
		return &TransitionError{Cluster: m.cluster, Event: ev, State: from}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s cluster %s: %w", ev, m.cluster, err)
	}
	// looplab abandons a transition whose ctx is done after leave_state;
	// the hooks get the caller's ctx through fireArgs instead.
	err := m.looplabMachine().Event(context.WithoutCancel(ctx), string(ev), fireArgs[P]{ctx: ctx, payload: payload})
	var canceled looplab.CanceledError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &canceled) && canceled.Err != nil:
		return fmt.Errorf("%s cluster %s (%s to %s): save the transition: %w",
			ev, m.cluster, displayState(from), displayState(to), canceled.Err)
	default:
		return fmt.Errorf("%s cluster %s (%s to %s): %w", ev, m.cluster, displayState(from), displayState(to), err)
	}
}

// Can reports whether ev is allowed in the current state. It does not wait
// for a running Fire: the answer is for the state before that Fire.
func (m *Machine[P]) Can(ev Event) bool {
	_, ok := m.allowed[edge{ev, m.Current()}]
	return ok
}

// Current returns the current state. During Persist it is still t.From;
// during Announce it is already t.To.
func (m *Machine[P]) Current() State {
	if f := m.f.Load(); f != nil {
		return fromLooplab(f.Current())
	}
	return m.initial
}

// AvailableEvents returns the events allowed in the current state, in the
// order of the table.
func (m *Machine[P]) AvailableEvents() []Event {
	cur := m.Current()
	var evs []Event
	for _, ev := range Events() {
		if _, ok := m.allowed[edge{ev, cur}]; ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

// persist runs in looplab's leave_state callback.
func (m *Machine[P]) persist(e *looplab.Event) {
	args := e.Args[0].(fireArgs[P])
	if err := m.hooks.Persist(args.ctx, m.transition(e, args)); err != nil {
		e.Cancel(err)
	}
}

// announce runs in looplab's enter_state callback.
func (m *Machine[P]) announce(e *looplab.Event) {
	m.hooks.Announce(m.transition(e, e.Args[0].(fireArgs[P])))
}

func (m *Machine[P]) transition(e *looplab.Event, args fireArgs[P]) Transition[P] {
	return Transition[P]{
		Cluster: m.cluster,
		Event:   Event(e.Event),
		From:    fromLooplab(e.Src),
		To:      fromLooplab(e.Dst),
		Payload: args.payload,
	}
}

func toLooplab(s State) string {
	if s == StateNew {
		return newStateName
	}
	return string(s)
}

func fromLooplab(s string) State {
	if s == newStateName {
		return StateNew
	}
	return State(s)
}
