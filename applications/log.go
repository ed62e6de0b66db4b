package applications

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// keptLogLines is how many log lines an instance keeps, newest.
const keptLogLines = 500

// LogLine is one line of an instance's log: what happened to it, when, in
// which phase — the zkelog of an application.
type LogLine struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Phase   Phase     `json:"phase"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

// logPrefix is the prefix of env's app's lines in BucketApplicationLogs.
func logPrefix(env, app string) string { return instanceKey(env, app) + "/" }

// logKey orders lines by their sequence number.
func logKey(env, app string, seq uint64) string {
	return fmt.Sprintf("%s%016d", logPrefix(env, app), seq)
}

// appendLog writes line as rec's next log line inside tx, advancing
// rec.LogSeq, and drops the oldest lines beyond keptLogLines now and then.
func appendLog(tx storage.Tx, rec *record, line LogLine) error {
	rec.LogSeq++
	line.Seq = rec.LogSeq
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	if err := tx.Put(storage.BucketApplicationLogs, logKey(rec.Env, rec.App, line.Seq), b); err != nil {
		return err
	}
	if line.Seq%50 != 0 || line.Seq <= keptLogLines {
		return nil
	}
	kvs, err := tx.ListPrefix(storage.BucketApplicationLogs, logPrefix(rec.Env, rec.App))
	if err != nil {
		return err
	}
	for i := 0; i < len(kvs)-keptLogLines; i++ {
		if err := tx.Delete(storage.BucketApplicationLogs, kvs[i].Key); err != nil {
			return err
		}
	}
	return nil
}

// Log returns env's app's log lines after since (0: all kept), oldest
// first.
func (m *Manager) Log(env, app string, since uint64) ([]LogLine, error) {
	if _, err := m.Get(env, app); err != nil {
		return nil, err
	}
	return readLog(m.opts.Store, env, app, since)
}

// readLog reads env's app's stored lines after since from s.
func readLog(s storage.Reader, env, app string, since uint64) ([]LogLine, error) {
	kvs, err := s.ListPrefix(storage.BucketApplicationLogs, logPrefix(env, app))
	if err != nil {
		return nil, fmt.Errorf("application %s: read its log: %w", instanceKey(env, app), err)
	}
	out := []LogLine{}
	for _, kv := range kvs {
		var l LogLine
		if err := json.Unmarshal(kv.Value, &l); err != nil || l.Seq <= since {
			continue
		}
		out = append(out, l)
	}
	return out, nil
}
