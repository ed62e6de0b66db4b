package applications

import "sync"

// followBuffer is how many log lines a live reader may fall behind by
// before it is cut off (it reconnects with since= and loses nothing).
const followBuffer = 256

// follower is one live reader of an instance's log.
type follower struct{ ch chan LogLine }

// Settled reports whether p is a phase an instance rests in until an
// admin acts: a live log ends there.
func Settled(p Phase) bool {
	return p == PhaseInstalled || p == PhaseFailed || p == PhaseUninstalled
}

// FollowLog returns env's app's log lines after since and, unless the
// instance rests in a settled phase, a channel of the lines that follow. The
// channel is closed after the line that settles the instance, when the
// instance is forgotten, or when the reader falls behind by followBuffer
// lines (the last line it got tells it where to resume). stop frees the
// reader; call it when done.
func (m *Manager) FollowLog(env, app string, since uint64) ([]LogLine, <-chan LogLine, func(), error) {
	inst, err := m.lookup(env, app)
	if err != nil {
		return nil, nil, nil, err
	}
	key := instanceKey(env, app)
	// Lines are published under inst.mu: reading the stored ones and
	// subscribing under it misses none and repeats none.
	inst.mu.Lock()
	defer inst.mu.Unlock()
	lines, err := readLog(m.opts.Store, env, app, since)
	if err != nil {
		return nil, nil, nil, err
	}
	if Settled(inst.rec.Phase) {
		return lines, nil, func() {}, nil
	}
	f := &follower{ch: make(chan LogLine, followBuffer)}
	m.fmu.Lock()
	set, ok := m.followers[key]
	if !ok {
		set = map[*follower]struct{}{}
		m.followers[key] = set
	}
	set[f] = struct{}{}
	m.fmu.Unlock()
	stop := sync.OnceFunc(func() {
		m.fmu.Lock()
		defer m.fmu.Unlock()
		m.dropFollowerLocked(key, f)
	})
	return lines, f.ch, stop, nil
}

// publishLine hands line to key's live readers, and ends their streams
// when the line settles the instance. A reader whose buffer is full is
// cut off rather than waited for.
func (m *Manager) publishLine(key string, line LogLine, settle bool) {
	m.fmu.Lock()
	defer m.fmu.Unlock()
	for f := range m.followers[key] {
		select {
		case f.ch <- line:
			if settle {
				m.dropFollowerLocked(key, f)
			}
		default:
			m.dropFollowerLocked(key, f)
		}
	}
}

// closeFollowers ends every live reader of key (the instance is gone).
func (m *Manager) closeFollowers(key string) {
	m.fmu.Lock()
	defer m.fmu.Unlock()
	for f := range m.followers[key] {
		m.dropFollowerLocked(key, f)
	}
}

// dropFollowerLocked closes f's channel once; the caller holds fmu.
func (m *Manager) dropFollowerLocked(key string, f *follower) {
	set := m.followers[key]
	if _, ok := set[f]; !ok {
		return
	}
	delete(set, f)
	close(f.ch)
	if len(set) == 0 {
		delete(m.followers, key)
	}
}
