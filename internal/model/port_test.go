package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPortUnmarshalJSON(t *testing.T) {
	tests := []struct {
		in      string
		want    Port
		wantErr string // fragment of the type error's Value
	}{
		{`22`, 22, ""},
		{`"22"`, 22, ""},
		{`" 2222 "`, 2222, ""},
		{`0`, 0, ""},
		{`-1`, -1, ""}, // range is validation's job
		{`70000`, 70000, ""},
		{`null`, 7, ""}, // left as it was
		{`"ssh"`, 0, `string "ssh"`},
		{`""`, 0, `string ""`},
		{`22.5`, 0, `number "22.5"`},
		{`1e3`, 0, `number "1e3"`},
		{`99999999999999999999999`, 0, `number "99999999999999999999999"`},
		{`"` + strings.Repeat("9", 100) + `"`, 0, "…"},
		{`true`, 0, "bool"},
		{`{"a":1}`, 0, "object"},
		{`[22]`, 0, "array"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p := Port(7)
			err := json.Unmarshal([]byte(tt.in), &p)
			if tt.wantErr == "" {
				if err != nil || p != tt.want {
					t.Fatalf("Unmarshal(%s) = %d, %v; want %d", tt.in, p, err, tt.want)
				}
				return
			}
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) || typeErr.Type != portType || !strings.Contains(typeErr.Value, tt.wantErr) {
				t.Fatalf("Unmarshal(%s) error = %#v; want a type error about %q", tt.in, err, tt.wantErr)
			}
			if len(typeErr.Value) > 64 {
				t.Fatalf("error echoes %d bytes of input", len(typeErr.Value))
			}
		})
	}
}

func TestPortInConfigRoundTrip(t *testing.T) {
	var c ClusterConfig
	body := `{"sshPort":"2222","nodes":[{"name":"n1","sshPort":"23"},{"name":"n2","sshPort":24}]}`
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if c.SSHPort != 2222 || c.Nodes[0].SSHPort != 23 || c.Nodes[1].SSHPort != 24 {
		t.Fatalf("decoded %+v", c)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sshPort":2222`, `"sshPort":23`, `"sshPort":24`} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("encoded %s lacks %s (ports are written as numbers)", out, want)
		}
	}
}
