package cli

import (
	"bytes"
	"strings"
	"testing"
)

// A command whose output was cut shows TRUNCATED true in the list.
func TestHostCommandKindShowsTruncated(t *testing.T) {
	objs := []object{
		{"id": "20260101-000000.000-aaaaaa", "state": "Finished", "startedBy": "admin", "hosts": []any{"h1", "h2"}, "truncated": true},
		{"id": "20260101-000001.000-bbbbbb", "state": "Running", "startedBy": "admin", "hosts": []any{"h1"}},
	}
	var b bytes.Buffer
	if err := printList(&b, outTable, hostCommandKind(), objs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "TRUNCATED") ||
		!strings.Contains(lines[1], "h1,h2") || !strings.Contains(lines[1], "true") || !strings.Contains(lines[2], "false") {
		t.Errorf("table:\n%s\nwant TRUNCATED true for the cut command, false for the other", b.String())
	}
}
