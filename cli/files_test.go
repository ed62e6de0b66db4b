package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadObjectFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		wantErr    string
		check      func(object) bool
	}{
		{"yaml", "name: lab\nsshPort: 22\nnodes:\n- name: n1\n  roles: [worker]\n", "", func(o object) bool {
			n := o["nodes"].([]any)[0].(map[string]any)
			return o["name"] == "lab" && o["sshPort"] == float64(22) && n["roles"].([]any)[0] == "worker"
		}},
		{"json", `{"name": "lab", "nodes": [{"name": "n1"}]}`, "", func(o object) bool { return o["name"] == "lab" }},
		{"yaml of a get, read-only fields and all", "id: lab\ntype: cluster\nname: lab\nstatus: Running\nlastOperation:\n  type: create\n", "", func(o object) bool {
			return o["status"] == "Running" && withoutReadOnly(o)["status"] == nil && withoutReadOnly(o)["name"] == "lab" && o["id"] == "lab"
		}},
		{"a list is not an object", "- a\n- b\n", "does not hold one object", nil},
		{"not yaml", "name: [unclosed\n", "neither YAML nor JSON", nil},
		{"empty", "", "does not hold one object", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			obj, err := readObjectFile(path, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(obj) {
				t.Errorf("%v %v", err, obj)
			}
		})
	}
	if obj, err := readObjectFile("-", strings.NewReader("name: from-stdin\n")); err != nil || obj["name"] != "from-stdin" {
		t.Errorf("stdin: %v %v", err, obj)
	}
	if _, err := readObjectFile(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("a missing file read")
	}
}

func TestWithoutReadOnlyKeepsTheInput(t *testing.T) {
	in := object{"name": "lab", "status": "Running", "certificateWarning": map[string]any{"days": 3.0}}
	out := withoutReadOnly(in)
	if len(out) != 1 || in["status"] != "Running" {
		t.Errorf("in %v out %v", in, out)
	}
}
