package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/mux"
)

// operationResource renders one operation of a cluster's history in the
// API's envelope: id, type "operation", links, and the operation's own
// fields, its kind (create, update, …) under "kind" since "type" is the
// envelope's.
func operationResource(cluster string, op any, started time.Time) (map[string]any, error) {
	b, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("encode operation: %w", err)
	}
	var fields map[string]any
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encode operation: %w", err)
	}
	fields["kind"] = fields["type"]
	id := started.UTC().Format(time.RFC3339Nano)
	base := newResourceBase(id, "operation", map[string]string{
		"collection": apiPrefix + "/clusters/" + cluster + "/operations",
	}, started)
	fields["id"], fields["type"], fields["links"], fields["creationTimestamp"] = base.ID, base.Type, base.Links, base.CreationTimestamp
	return fields, nil
}

// listOperations answers GET /clusters/{cluster}/operations: the running
// operation, if any, then the last ended ones (at most 50), newest first.
// Whoever may see the cluster may see its history.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	name := mux.Vars(r)["cluster"]
	if err := s.requireGrant(r, name); err != nil {
		return err
	}
	ops, err := s.reads.Operations(name)
	if err != nil {
		return err
	}
	data := make([]any, 0, len(ops))
	for _, op := range ops {
		res, err := operationResource(name, op, op.StartedAt)
		if err != nil {
			return err
		}
		data = append(data, res)
	}
	return writeCollection(w, "operation", apiPrefix+"/clusters/"+name+"/operations", data)
}
