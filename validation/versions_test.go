package validation

import (
	"errors"
	"strings"
	"testing"
)

func TestRequireSupportedVersion(t *testing.T) {
	supported := []string{"v1.36.3", "v1.35.9"}
	other := errors.New("store closed")
	nameErr := Errors{{Field: "name", Reason: "is required"}}
	formErr := Errors{{Field: "kubernetesVersion", Reason: "must look like v1.36.3"}}
	tests := []struct {
		name       string
		in         error
		v          string
		supported  []string
		wantFields []string
		wantIn     string
	}{
		{"supported", nil, "v1.36.3", supported, nil, ""},
		{"no list checks nothing", nil, "v1.20.0", nil, nil, ""},
		{"unsupported", nil, "v1.20.0", supported, []string{"kubernetesVersion"}, "supported: v1.35.9, v1.36.3"},
		{"joins other problems", nameErr, "v1.20.0", supported, []string{"name", "kubernetesVersion"}, "v1.20.0 cannot be installed"},
		{"form error kept alone", formErr, "1.20", supported, []string{"kubernetesVersion"}, "must look like"},
		{"other errors untouched", other, "v1.20.0", supported, nil, "store closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RequireSupportedVersion(tt.in, tt.v, tt.supported)
			var errs Errors
			errors.As(err, &errs)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.wantFields, ",") {
				t.Fatalf("fields = %v, want %v (err %v)", fields, tt.wantFields, err)
			}
			if tt.wantIn == "" && err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if tt.wantIn != "" && (err == nil || !strings.Contains(err.Error(), tt.wantIn)) {
				t.Fatalf("err = %v, want it to say %q", err, tt.wantIn)
			}
			if len(tt.wantFields) > 0 && !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v does not match ErrInvalid", err)
			}
		})
	}
}
