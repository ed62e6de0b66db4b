package main

import (
	"archive/tar"
	"fmt"
	"path"
)

// completeTree returns entries plus a directory entry (mode 0755) for every
// parent directory no entry names, so that every path in the layer has its
// parents before it. Two entries with one name are an error: the layer
// would hold both and the winner would depend on the unpacker.
func completeTree(entries []entry) ([]entry, error) {
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		if names[e.name] {
			return nil, fmt.Errorf("two image entries for /%s", e.name)
		}
		names[e.name] = true
	}
	out := append([]entry(nil), entries...)
	for _, e := range entries {
		for d := path.Dir(e.name); d != "." && d != "/" && !names[d]; d = path.Dir(d) {
			names[d] = true
			out = append(out, entry{name: d, mode: 0o755, typ: tar.TypeDir})
		}
	}
	return out, nil
}
