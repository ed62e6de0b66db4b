package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"
)

// maxFileBytes bounds a file given with -f: the server takes at most 8 MiB.
const maxFileBytes = 8 << 20

// readObjectFile reads a YAML or JSON object from path ("-" is in) and
// returns it decoded. YAML is turned into JSON through the API's own
// rules (sigs.k8s.io/yaml), so both spell fields the same way.
func readObjectFile(path string, in io.Reader) (object, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(in, maxFileBytes+1))
	} else {
		var f *os.File
		if f, err = os.Open(path); err == nil {
			b, err = io.ReadAll(io.LimitReader(f, maxFileBytes+1))
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than the server's limit of %d bytes", path, maxFileBytes)
	}
	return decodeObject(path, b)
}

// decodeObject decodes YAML or JSON text holding one object.
func decodeObject(name string, b []byte) (object, error) {
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s is neither YAML nor JSON: %w", name, err)
	}
	var obj object
	if err := json.Unmarshal(js, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s does not hold one object (a mapping of fields)", name)
	}
	return obj, nil
}

// clusterReadOnly are the fields of a cluster resource that the server
// sets: a file made by `cluster get -o yaml` has them, and create and apply
// leave them out, so that the file of a get always applies (the server
// would refuse some when they changed meanwhile, a status or lastOperation
// say, and certificateWarning always).
func clusterReadOnly() []string {
	return []string{
		"id", "type", "links", "creationTimestamp", "status", "imported", "reason",
		"nodeCount", "version", "lastOperation", "certificateWarning", "actions",
	}
}

// withoutReadOnly returns obj without the read-only fields.
func withoutReadOnly(obj object) object {
	out := make(object, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	for _, k := range clusterReadOnly() {
		delete(out, k)
	}
	return out
}
