package clustermanager

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"sync"

	"github.com/zdnscloud/singlecloud/storage"
)

// etaWeight is how much the newest duration of a step counts against what
// was learnt before: recent runs matter most, one slow run does not undo
// the rest.
const etaWeight = 0.3

// etaModel learns how long each step of each operation kind takes, by the
// size of the cluster, from the operations this server finished, and
// estimates how long a running operation still needs. Steps are known by
// their place in the operation (index of total), which is fixed per kind;
// cluster sizes are grouped by powers of two. What it learnt is kept in
// the settings bucket, so a restart does not forget it.
type etaModel struct {
	mu      sync.Mutex
	seconds map[string]float64
}

// etaKey names one step of one operation kind at one cluster size.
func etaKey(typ OperationType, index, total, nodes int) string {
	return fmt.Sprintf("%s/%d/%d/%d", typ, total, bits.Len(uint(nodes)), index)
}

// load reads what earlier runs of the server learnt; a missing or damaged
// row starts from nothing (estimates are only estimates).
func (m *etaModel) load(store storage.Reader) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seconds = map[string]float64{}
	b, err := store.Get(storage.BucketSettings, storage.SettingStepDurations)
	if err != nil {
		return
	}
	_ = json.Unmarshal(b, &m.seconds)
}

// learn folds the durations of op's steps that ran (not skipped) into the
// model and saves it. Only a successful operation's steps are complete
// enough to learn from.
func (m *etaModel) learn(store storage.Store, op *Operation, nodes int) {
	if op.State != OpSucceeded || op.Total == 0 {
		return
	}
	m.mu.Lock()
	if m.seconds == nil {
		m.seconds = map[string]float64{}
	}
	learnt := false
	for _, st := range op.Steps {
		if st.Skipped || st.Index < 1 || st.Index > op.Total {
			continue
		}
		k := etaKey(op.Type, st.Index, op.Total, nodes)
		if old, ok := m.seconds[k]; ok {
			m.seconds[k] = (1-etaWeight)*old + etaWeight*st.Seconds
		} else {
			m.seconds[k] = st.Seconds
		}
		learnt = true
	}
	var b []byte
	if learnt {
		b, _ = json.Marshal(m.seconds)
	}
	m.mu.Unlock()
	if b != nil {
		_ = store.Put(storage.BucketSettings, storage.SettingStepDurations, b)
	}
}

// estimate returns the seconds left for an operation of typ on nodes
// nodes that is at step index of total and has spent elapsed seconds in
// it, or nil when some remaining step was never measured.
func (m *etaModel) estimate(typ OperationType, index, total, nodes int, elapsed float64) *int {
	if total == 0 || index == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	left := 0.0
	for i := index; i <= total; i++ {
		s, ok := m.seconds[etaKey(typ, i, total, nodes)]
		if !ok {
			return nil
		}
		if i == index {
			s = max(s-elapsed, 0)
		}
		left += s
	}
	eta := int(left + 0.5)
	return &eta
}
