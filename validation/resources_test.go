package validation

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Quantities are bounded before they are converted: a huge one is refused
// instead of wrapping to 0 or -1 (no limit), a tiny limit Docker would
// refuse on the host is refused up front, zero stays "no limit".
func TestResourceQuantities(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parse  func(string, bool) (int64, error)
		q      string
		limit  bool
		want   int64
		reason string
	}{
		{"cpu millis", CPUMillis, "500m", true, 500, ""},
		{"cpu decimal", CPUMillis, "1.5", true, 1500, ""},
		{"cpu zero is no limit", CPUMillis, "0", true, 0, ""},
		{"cpu at the max", CPUMillis, "1024", true, 1024000, ""},
		{"cpu over the max", CPUMillis, "1025", true, 0, "more than 1024 CPUs"},
		{"cpu 8Ei", CPUMillis, "8Ei", true, 0, "more than 1024 CPUs"},
		{"cpu 1e19", CPUMillis, "1e19", false, 0, "more than 1024 CPUs"},
		{"cpu limit below docker's", CPUMillis, "5m", true, 0, "at least 10m"},
		{"cpu request below docker's limit", CPUMillis, "5m", false, 5, ""},
		{"cpu nano rounds up", CPUMillis, "1n", false, 1, ""},
		{"cpu negative", CPUMillis, "-1", true, 0, "is not a quantity"},
		{"cpu text", CPUMillis, "fast", true, 0, "is not a quantity"},
		{"memory Mi", MemoryBytes, "128Mi", true, 128 << 20, ""},
		{"memory G", MemoryBytes, "1G", true, 1e9, ""},
		{"memory zero is no limit", MemoryBytes, "0", true, 0, ""},
		{"memory at docker's minimum", MemoryBytes, "6Mi", true, 6 << 20, ""},
		{"memory below docker's minimum", MemoryBytes, "4Mi", true, 0, "at least 6Mi"},
		{"memory request below docker's minimum", MemoryBytes, "4Mi", false, 4 << 20, ""},
		{"memory at the max", MemoryBytes, "1Pi", true, 1 << 50, ""},
		{"memory over the max", MemoryBytes, "1025Ti", true, 0, "more than 1Pi"},
		{"memory 1e19 (was --memory 0)", MemoryBytes, "1e19", true, 0, "more than 1Pi"},
		{"memory 8Ei", MemoryBytes, "8Ei", false, 0, "more than 1Pi"},
		{"memory huge exponent", MemoryBytes, "9e300", true, 0, "more than 1Pi"},
		{"memory fraction of a byte rounds up", MemoryBytes, "6291456.5", true, 6291457, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.q, tc.limit)
			switch {
			case tc.reason == "" && (err != nil || got != tc.want):
				t.Errorf("(%q) = %d, %v; want %d", tc.q, got, err, tc.want)
			case tc.reason != "" && (err == nil || !strings.Contains(err.Error(), tc.reason)):
				t.Errorf("(%q) = %d, %v; want an error saying %q", tc.q, got, err, tc.reason)
			}
		})
	}
}

// ValidateApplication names the field of every quantity out of bounds.
func TestValidateApplicationResourceBounds(t *testing.T) {
	one := 1
	s := model.ApplicationSpec{Version: "v1", Deployments: []model.VersionDeployment{{Version: "v1", Image: "busybox:1.36", Replicas: &one,
		Resources: model.Resources{CPURequest: "2000", MemoryRequest: "64Mi", CPULimit: "8Ei", MemoryLimit: "1e19"}}}}
	errs := fieldErrors(t, ValidateApplication("web", s))
	want := []string{"deployments[0].resources.cpuRequest", "deployments[0].resources.cpuLimit", "deployments[0].resources.memoryLimit"}
	if got := errs.Fields(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("fields %v, want %v (%v)", got, want, errs)
	}
}
