package snapshots

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"time"
)

// Names become path elements, so they are checked against strict
// allowlists: no dots, slashes, upper case or empty names can get through.
var (
	// clusterRE is a Kubernetes DNS label, which cluster names already are.
	clusterRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// idRE is the id made by newID: UTC date, time, and 4 random hex digits.
	idRE = regexp.MustCompile(`^[0-9]{8}-[0-9]{6}-[0-9a-f]{4}$`)
)

// idTimeLayout is the time part of an id; ids of one cluster sort by time.
const idTimeLayout = "20060102-150405"

// validateCluster returns an error wrapping ErrInvalidID unless cluster is
// a valid cluster name.
func validateCluster(cluster string) error {
	if !clusterRE.MatchString(cluster) {
		return fmt.Errorf("cluster %q: a cluster name is 1-63 lower-case letters, digits and '-', "+
			"starting and ending with a letter or digit: %w", cluster, ErrInvalidID)
	}
	return nil
}

// validateID returns an error wrapping ErrInvalidID unless id has the form
// of a snapshot id.
func validateID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("snapshot id %q: a snapshot id looks like 20261125-140102-3f9a "+
			"(take it from the snapshot list): %w", id, ErrInvalidID)
	}
	return nil
}

// validateRef validates both parts of a snapshot reference.
func validateRef(cluster, id string) error {
	if err := validateCluster(cluster); err != nil {
		return err
	}
	return validateID(id)
}

// newID returns an id for a snapshot taken at t: its UTC time to the second
// and 4 random hex digits, so snapshots taken in the same second differ.
func newID(t time.Time) (string, error) {
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make snapshot id: read random: %w", err)
	}
	return t.UTC().Format(idTimeLayout) + "-" + hex.EncodeToString(b[:]), nil
}
