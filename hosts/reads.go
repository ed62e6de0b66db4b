package hosts

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/storage"
)

// Reads answers the host manager's reads from the stored rows alone: a
// replica that does not lead serves them from its own copy of the store
// (issue 12). It shows what the last saved probe recorded.
type Reads struct {
	store storage.Reader
}

// NewReads returns the Reads of store.
func NewReads(store storage.Reader) *Reads { return &Reads{store: store} }

// List returns every stored host, sorted by name. A row that does not
// decode is left out (the leader refuses to start on one).
func (r *Reads) List() []Host {
	rows, err := r.store.List(storage.BucketHosts)
	if err != nil {
		return nil
	}
	out := make([]Host, 0, len(rows))
	for _, kv := range rows {
		var rec record
		if json.Unmarshal(kv.Value, &rec) == nil {
			out = append(out, rec.Host)
		}
	}
	return out
}

// Get returns one stored host.
func (r *Reads) Get(name string) (Host, error) {
	b, err := r.store.Get(storage.BucketHosts, name)
	if errors.Is(err, storage.ErrNotFound) {
		return Host{}, fmt.Errorf("host %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Host{}, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Host{}, fmt.Errorf("host %s: %w", name, err)
	}
	return rec.Host, nil
}

// Command returns one command record.
func (r *Reads) Command(id string) (CommandRecord, error) { return readCommand(r.store, id) }

// Commands returns the kept command records, newest first.
func (r *Reads) Commands() ([]CommandRecord, error) { return readCommands(r.store) }

// readCommand reads one command record from s.
func readCommand(s storage.Reader, id string) (CommandRecord, error) {
	data, err := s.Get(storage.BucketHostCommands, id)
	if errors.Is(err, storage.ErrNotFound) {
		return CommandRecord{}, fmt.Errorf("command %s: %w", id, ErrCommandNotFound)
	}
	if err != nil {
		return CommandRecord{}, err
	}
	var rec CommandRecord
	return rec, json.Unmarshal(data, &rec)
}

// readCommands reads the kept command records from s, newest first.
func readCommands(s storage.Reader) ([]CommandRecord, error) {
	rows, err := s.List(storage.BucketHostCommands)
	if err != nil {
		return nil, err
	}
	out := make([]CommandRecord, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		var rec CommandRecord
		if err := json.Unmarshal(rows[i].Value, &rec); err == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}
