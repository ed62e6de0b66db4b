package snapshots

import (
	"fmt"
	"time"
)

// DrillResult is what a restore drill found.
type DrillResult struct {
	// Revision and KeyCount are what the restored etcd reported.
	Revision int64
	KeyCount int
	// Duration is how long the drill took, restore and start included.
	Duration time.Duration
}

// MarkVerifying records that snapshot id of cluster is being drilled. It
// fails with an error wrapping ErrBusy if this store is drilling it
// already. The drill must end with SetVerification or CancelVerifying.
func (s *Store) MarkVerifying(cluster, id string) (Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(cluster, id)
	if _, busy := s.verifying[k]; busy {
		return Meta{}, fmt.Errorf("snapshot %s/%s: wait for its drill to finish: %w", cluster, id, ErrBusy)
	}
	m, err := s.getLocked(cluster, id)
	if err != nil {
		return Meta{}, err
	}
	prev := m
	m.Verification = Verifying
	if err := s.writeMetaLocked(m); err != nil {
		return Meta{}, fmt.Errorf("mark snapshot %s/%s as verifying: %w", cluster, id, err)
	}
	s.verifying[k] = prev
	return m, nil
}

// SetVerification records the end of a drill of snapshot id of cluster:
// Verified if drillErr is nil, otherwise Failed with drillErr's message.
func (s *Store) SetVerification(cluster, id string, r DrillResult, drillErr error) (Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(cluster, id)
	defer delete(s.verifying, k)
	m, err := s.getLocked(cluster, id)
	if err != nil {
		return Meta{}, fmt.Errorf("record drill result: %w", err)
	}
	m.DrillSeconds = r.Duration.Seconds()
	if drillErr == nil {
		now := s.clock().UTC()
		m.Verification = Verified
		m.VerifiedAt = &now
		m.VerifyError = ""
	} else {
		m.Verification = Failed
		m.VerifiedAt = nil
		m.VerifyError = drillErr.Error()
	}
	if err := s.writeMetaLocked(m); err != nil {
		return Meta{}, fmt.Errorf("record drill result of %s/%s: %w", cluster, id, err)
	}
	return m, nil
}

// CancelVerifying puts back the verification state snapshot id of cluster
// had before MarkVerifying, for a drill that was interrupted and so proved
// nothing. A snapshot that is not being drilled is left as it is.
func (s *Store) CancelVerifying(cluster, id string) (Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return Meta{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(cluster, id)
	prev, busy := s.verifying[k]
	if !busy {
		return s.getLocked(cluster, id)
	}
	delete(s.verifying, k)
	m, err := s.getLocked(cluster, id)
	if err != nil {
		return Meta{}, err
	}
	m.Verification, m.VerifiedAt, m.VerifyError, m.DrillSeconds =
		prev.Verification, prev.VerifiedAt, prev.VerifyError, prev.DrillSeconds
	if err := s.writeMetaLocked(m); err != nil {
		return Meta{}, fmt.Errorf("cancel drill of %s/%s: %w", cluster, id, err)
	}
	return m, nil
}
