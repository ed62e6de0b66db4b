package validation

import (
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateImport(t *testing.T) {
	const kubeconfig = "apiVersion: v1\nkind: Config\n"
	tests := []struct {
		name   string
		req    model.ImportRequest
		want   []string
		reason string
	}{
		{"valid", model.ImportRequest{Name: "edge-1", Kubeconfig: kubeconfig}, nil, ""},
		{"name empty", model.ImportRequest{Kubeconfig: kubeconfig}, []string{"name"}, "is required"},
		{"name not a label", model.ImportRequest{Name: "Edge_1", Kubeconfig: kubeconfig}, []string{"name"}, "lower case"},
		{"name too long", model.ImportRequest{Name: "a234567890123456789012345678901234567890123456789012345678901234", Kubeconfig: kubeconfig}, []string{"name"}, "at most 63"},
		{"kubeconfig empty", model.ImportRequest{Name: "edge-1"}, []string{"kubeconfig"}, "is required"},
		{"kubeconfig blank", model.ImportRequest{Name: "edge-1", Kubeconfig: " \n\t"}, []string{"kubeconfig"}, "is required"},
		{"kubeconfig content not checked here", model.ImportRequest{Name: "edge-1", Kubeconfig: "not yaml at all"}, nil, ""},
		{"both at once", model.ImportRequest{Name: "-x"}, []string{"name", "kubeconfig"}, "start and end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkViolations(t, ValidateImport(tt.req), tt.want, tt.reason)
		})
	}
}
