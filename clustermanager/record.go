package clustermanager

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/zke"
)

// Kind says how singlecloud came to manage a cluster.
type Kind string

// The cluster kinds.
const (
	KindImported Kind = "imported"
	KindCreated  Kind = "created"
)

// record is one row of storage.BucketClusters: everything singlecloud knows
// about a cluster, enough to rebuild it at start-up (SPEC §5). Secrets live
// in secrets, which is sealed on disk and never leaves the manager.
type record struct {
	Name          string               `json:"name"`
	Kind          Kind                 `json:"kind"`
	Status        fsm.State            `json:"status"`
	Unavailable   bool                 `json:"unavailable"`
	Reason        string               `json:"reason,omitempty"`
	Version       string               `json:"version,omitempty"`
	NodeCount     int                  `json:"nodeCount,omitempty"`
	Config        *model.ClusterConfig `json:"config,omitempty"`
	LastOperation *Operation           `json:"lastOperation,omitempty"`
	// CertWarnedWithin is the certificate warning threshold (days) last
	// announced for the cluster, so that a restart does not announce it
	// again; absent when none was.
	CertWarnedWithin *int `json:"certWarnedWithin,omitempty"`
	// RestoreSnapshot is the snapshot an unfinished restore puts back
	// (a retry or a restart resumes with it); empty otherwise.
	RestoreSnapshot string    `json:"restoreSnapshot,omitempty"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`

	secrets secrets
}

// secrets are the sealed part of a record.
type secrets struct {
	Kubeconfig []byte `json:"kubeconfig,omitempty"`
	SSHKey     string `json:"sshKey,omitempty"`
	// RegistryPasswords are the private registries' passwords, by URL.
	RegistryPasswords map[string]string `json:"registryPasswords,omitempty"`
	// ZKE is the installer's state of a created cluster (certificates
	// and keys, pinned host keys, checkpoints).
	ZKE *zke.State `json:"zke,omitempty"`
}

// diskRecord is record's stored form: the public fields plus the sealed
// secrets.
type diskRecord struct {
	record
	Sealed []byte `json:"sealed,omitempty"`
}

// clone returns a deep enough copy for a transition to edit.
func (r *record) clone() *record {
	c := *r
	if r.Config != nil {
		cfg := *r.Config
		cfg.Nodes = append([]model.Node(nil), r.Config.Nodes...)
		cfg.PrivateRegistries = append([]model.PrivateRegistry(nil), r.Config.PrivateRegistries...)
		c.Config = &cfg
	}
	c.LastOperation = r.LastOperation.clone()
	if r.secrets.ZKE != nil {
		st := r.secrets.ZKE.Clone()
		c.secrets.ZKE = &st
	}
	return &c
}

// encodeRecord seals r's secrets, bound to r's row (the clusters bucket
// and r.Name, its key), and marshals the row.
func encodeRecord(r *record, sealer storage.Sealer) ([]byte, error) {
	d := diskRecord{record: *r}
	if r.Config != nil {
		cfg, _ := splitConfig(*r.Config)
		d.Config = &cfg
	}
	plain, err := json.Marshal(r.secrets)
	if err != nil {
		return nil, fmt.Errorf("encode secrets of cluster %s: %w", r.Name, err)
	}
	if d.Sealed, err = sealer.Seal(plain, storage.AAD(storage.BucketClusters, r.Name)); err != nil {
		return nil, fmt.Errorf("seal secrets of cluster %s: %w", r.Name, err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode cluster %s: %w", r.Name, err)
	}
	return b, nil
}

// decodeRecord is encodeRecord's inverse. The secrets open only under the
// AAD of the record's own name; Load refuses a record stored under another
// key than its name, so together a sealed value opens only in the row it
// was written to. Secrets sealed before values were bound to rows (seal
// version 1) are refused: Load re-seals them once (decodeLegacyRecord),
// after which such a value can only have been copied from another row.
func decodeRecord(b []byte, sealer storage.Sealer) (*record, error) {
	rec, _, err := decodeRecordSeals(b, sealer, false)
	return rec, err
}

// decodeLegacyRecord is decodeRecord for the one start that binds the
// secrets of older rows: it also opens seal-version-1 secrets, and reports
// whether it did, so that the caller re-seals those rows bound.
func decodeLegacyRecord(b []byte, sealer storage.Sealer) (rec *record, unbound bool, err error) {
	return decodeRecordSeals(b, sealer, true)
}

// decodeRecordSeals decodes b, opening seal-version-1 secrets only when
// allowUnbound is set.
func decodeRecordSeals(b []byte, sealer storage.Sealer, allowUnbound bool) (*record, bool, error) {
	var d diskRecord
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, false, fmt.Errorf("decode cluster record: %w", err)
	}
	r := d.record
	if len(d.Sealed) == 0 {
		return &r, false, nil
	}
	unbound := storage.IsUnbound(d.Sealed)
	var plain []byte
	var err error
	switch {
	case unbound && !allowUnbound:
		err = fmt.Errorf("sealed without row binding, although every row was re-sealed bound at an earlier start: copied from another row: %w", storage.ErrDecrypt)
	case unbound:
		plain, err = storage.OpenUnbound(sealer, d.Sealed)
	default:
		plain, err = sealer.Open(d.Sealed, storage.AAD(storage.BucketClusters, r.Name))
	}
	if err != nil {
		return &r, unbound, fmt.Errorf("open secrets of cluster %s: %w", r.Name, err)
	}
	if err := json.Unmarshal(plain, &r.secrets); err != nil {
		return &r, unbound, fmt.Errorf("decode secrets of cluster %s: %w", r.Name, err)
	}
	return &r, unbound, nil
}

// nodes returns the configured nodes of a created cluster (none for an
// imported one).
func (r *record) nodes() []model.Node {
	if r.Config == nil {
		return nil
	}
	return r.Config.Nodes
}
