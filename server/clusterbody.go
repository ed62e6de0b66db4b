package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// clusterBody is the body of a cluster create or update: the config, plus
// the cluster resource's read-only fields, which a client that PUTs back
// what it just fetched sends along. Every other field is still an unknown
// field (422 naming it), so typos are caught.
type clusterBody struct {
	model.ClusterConfig
	clusterReadOnly
}

// clusterReadOnly holds the read-only fields of a cluster resource as the
// client sent them; an absent field is nil. The tags match clusterResource
// and resourceBase.
type clusterReadOnly struct {
	ID                json.RawMessage `json:"id"`
	Type              json.RawMessage `json:"type"`
	Links             json.RawMessage `json:"links"`
	CreationTimestamp json.RawMessage `json:"creationTimestamp"`
	Status            json.RawMessage `json:"status"`
	Imported          json.RawMessage `json:"imported"`
	Reason            json.RawMessage `json:"reason"`
	NodeCount         json.RawMessage `json:"nodeCount"`
	Version           json.RawMessage `json:"version"`
	LastOperation     json.RawMessage `json:"lastOperation"`
	// CertificateWarning is accepted and ignored: its daysLeft moves
	// with the calendar, so a body fetched yesterday would differ.
	CertificateWarning json.RawMessage `json:"certificateWarning"`
	// Actions is accepted and ignored: it follows from the status and
	// the stored record, which the update is checked against anyway.
	Actions json.RawMessage `json:"actions"`
}

// fields returns the read-only fields by their JSON names.
func (ro *clusterReadOnly) fields() map[string]json.RawMessage {
	return map[string]json.RawMessage{
		"id": ro.ID, "type": ro.Type, "links": ro.Links, "creationTimestamp": ro.CreationTimestamp,
		"status": ro.Status, "imported": ro.Imported, "reason": ro.Reason, "nodeCount": ro.NodeCount,
		"version": ro.Version, "lastOperation": ro.LastOperation,
	}
}

// decodeClusterBody decodes a create (current nil) or update body of the
// cluster current. Read-only fields are accepted when they equal the
// cluster's as the admin fetches it (absent, null and empty count as
// equal to an empty value); any that differs, or any on a create, is a
// 422 naming it. An enabled loadBalance is refused, and its password is
// dropped: nothing uses it.
func (s *Server) decodeClusterBody(r *http.Request, current *clustermanager.Cluster) (model.ClusterConfig, error) {
	var body clusterBody
	if err := s.decodeBody(r, &body); err != nil {
		return model.ClusterConfig{}, err
	}
	if err := checkReadOnly(&body.clusterReadOnly, current); err != nil {
		return model.ClusterConfig{}, err
	}
	cfg := body.ClusterConfig
	if lb := cfg.LoadBalance; lb != nil {
		if lb.Enable {
			return model.ClusterConfig{}, invalidOption(`loadBalance.enable: a managed load balancer is not built into this singlecloud yet; send "enable": false or leave loadBalance out`)
		}
		kept := *lb
		kept.Password = ""
		cfg.LoadBalance = &kept
	}
	return cfg, nil
}

// checkReadOnly compares the read-only fields sent with current's.
func checkReadOnly(ro *clusterReadOnly, current *clustermanager.Cluster) error {
	have := map[string]json.RawMessage{}
	if current != nil {
		js, err := json.Marshal(toClusterResource(*current, true))
		if err != nil {
			return fmt.Errorf("encode cluster %s: %w", current.Name, err)
		}
		if err := json.Unmarshal(js, &have); err != nil {
			return fmt.Errorf("decode cluster %s: %w", current.Name, err)
		}
	}
	var differ []string
	for name, sent := range ro.fields() {
		if len(sent) == 0 || string(sent) == "null" {
			continue // not sent
		}
		if !sameJSON(sent, have[name]) {
			differ = append(differ, name)
		}
	}
	if len(differ) == 0 {
		return nil
	}
	sort.Strings(differ)
	if current == nil {
		return invalidOption(fmt.Sprintf("%s: read-only, set by the server; leave it out of a create", strings.Join(differ, ", ")))
	}
	return invalidOption(fmt.Sprintf("%s: read-only, and differs from the cluster's current value; send it as fetched (GET the cluster again) or leave it out", strings.Join(differ, ", ")))
}

// sameJSON reports whether two JSON values are equal, numbers compared by
// their text and key order ignored; an absent value (the server omits
// empty ones), null, false, 0 and an empty string, object or array are all
// equal.
func sameJSON(a, b json.RawMessage) bool {
	va, oka := decodeAny(a)
	vb, okb := decodeAny(b)
	if !oka || !okb {
		return false
	}
	if isEmptyJSON(va) && isEmptyJSON(vb) {
		return true
	}
	return reflect.DeepEqual(va, vb)
}

// decodeAny decodes raw with numbers kept as text; absent is nil.
func decodeAny(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func isEmptyJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case json.Number:
		return x == "0"
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
