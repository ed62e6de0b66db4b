package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeClusterBody feeds arbitrary bodies to the decoding of a
// cluster create. It must never panic, must answer every failure as a
// client error (413 or 422, never a 500), and must never accept a body
// with a field the API does not know, at any depth.
func FuzzDecodeClusterBody(f *testing.F) {
	seeds := []string{
		`{"name":"lab","sshPort":22}`,
		`{"name":"lab","sshPort":"22"}`,
		`{"name":"lab","sshPort":" 2222 "}`,
		`{"name":"lab","sshPort":"ssh"}`,
		`{"name":"lab","sshPort":99999999999999999999999999999}`,
		`{"name":"lab","sshPort":1e400}`,
		`{"name":"lab","sshPort":-1}`,
		`{"name":"lab","nodes":[{"name":"n1","sshPort":"23","kubelet":{"extraArgs":{"v":"2"}}}]}`,
		`{"name":"lab","bogus":1}`,
		`{"name":"lab","nodes":[{"name":"n1","bogus":true}]}`,
		`{"name":"lab","network":{"plugin":"bridge","ifac":"eth0"}}`,
		`{"name":"lab","loadBalance":{"enable":false,"masterServer":"10.0.0.9","passwd":"x"}}`,
		`{"name":"lab","loadBalance":{"enable":true}}`,
		`{"id":"lab","type":"cluster","links":{"self":"/x"},"status":"Running"}`,
		`{"NAME":"lab","SshPort":"22"}`,
		`{"nodes":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
		`{"images":` + strings.Repeat(`{"a":`, 500) + `"x"` + strings.Repeat("}", 500) + `}`,
		`{"nodes":[{"labels":{"a":"b"},"taints":[{"key":"k","effect":"NoSchedule","extra":1}]}]}`,
		`{"name":"lab"} {"name":"again"}`,
		`{"name":"\u0000\ud800"}`,
		``,
		`null`,
		`[]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	srv := &Server{opts: Options{MaxBodyBytes: 1 << 16}}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, apiPrefix+"/clusters", bytes.NewReader(body))
		r.Body = http.MaxBytesReader(nil, r.Body, srv.opts.MaxBodyBytes)
		_, err := srv.decodeClusterBody(r, nil)
		if err != nil {
			var apiErr *APIError
			if !errors.As(err, &apiErr) || (apiErr.Status != http.StatusUnprocessableEntity && apiErr.Status != http.StatusRequestEntityTooLarge) {
				t.Fatalf("body %q: error %v is not a client error", body, err)
			}
			return
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("body %q was accepted but is not JSON: %v", body, err)
		}
		if path := unknownKey(v, reflect.TypeFor[clusterBody](), ""); path != "" {
			t.Fatalf("body %q was accepted with the unknown field %s", body, path)
		}
	})
}

// unknownKey returns the path of the first object key in v that type t
// has no JSON field for (encoding/json matches names case-insensitively),
// or "". Values t decodes itself (json.RawMessage, model.Port) are not
// looked into.
func unknownKey(v any, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[json.RawMessage]() || t == portType {
		return ""
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range x {
				if p := unknownKey(e, t.Elem(), path+"."+k); p != "" {
					return p
				}
			}
		case reflect.Struct:
			fields := jsonFields(t)
			for k, e := range x {
				ft, ok := lookupFold(fields, k)
				if !ok {
					return path + "." + k
				}
				if p := unknownKey(e, ft, path+"."+k); p != "" {
					return p
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for _, e := range x {
				if p := unknownKey(e, t.Elem(), path+"[]"); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// jsonFields maps the JSON names of struct t (embedded structs flattened)
// to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			for k, v := range jsonFields(sf.Type) {
				out[k] = v
			}
			continue
		}
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = sf.Type
	}
	return out
}

func lookupFold(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for k, t := range fields {
		if strings.EqualFold(k, key) {
			return t, true
		}
	}
	return nil, false
}
