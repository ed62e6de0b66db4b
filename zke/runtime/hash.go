package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// hashVersion prefixes the hashed text so that a deliberate change of the
// canonical form is visible as one.
const hashVersion = "zke-container-spec/v1\n"

// canonicalJSON is the canonical form of a normalized spec: encoding/json
// writes struct fields in declaration order and map keys sorted, and
// normalized sorted every set-like list.
func canonicalJSON(n ContainerSpec) []byte {
	data, err := json.Marshal(n)
	if err != nil {
		// A ContainerSpec holds only strings, bools, slices and string
		// maps: Marshal cannot fail.
		return []byte(err.Error())
	}
	return data
}

// specHash is the io.zke.spec-hash label of a normalized spec: the hex
// SHA-256 of its canonical JSON.
func specHash(n ContainerSpec) string {
	sum := sha256.Sum256(append([]byte(hashVersion), canonicalJSON(n)...))
	return hex.EncodeToString(sum[:])
}

// SpecHash returns the io.zke.spec-hash label that Ensure gives the
// container of spec on a Docker of cluster (Options.Cluster), so that a
// caller can check that a running container is up to date without
// changing anything. The error matches ErrInvalidSpec, as Ensure's would.
func SpecHash(spec ContainerSpec, cluster string) (string, error) {
	n, err := spec.normalized(cluster, RestartUnlessStopped)
	if err != nil {
		return "", err
	}
	return specHash(n), nil
}
