package validation

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// manyNodes returns n worker nodes with distinct names and addresses.
func manyNodes(n int, bad bool) []model.Node {
	nodes := make([]model.Node, n)
	for i := range nodes {
		nodes[i] = withDefaults(model.Node{
			Name:    fmt.Sprintf("w%d", i),
			Address: fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&255, i&255),
			Roles:   roles(worker),
		})
		if bad {
			nodes[i].Name = "Bad_Name"
		}
	}
	return nodes
}

func TestValidateNodeCount(t *testing.T) {
	tests := []struct {
		name  string
		extra int
		want  []string
	}{
		{"at the cap ok", MaxNodes - 3, nil},
		{"one over the cap", MaxNodes - 2, []string{"nodes"}},
		{"10,000 nodes", 10000, []string{"nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.Nodes = append(c.Nodes, manyNodes(tt.extra, false)...)
			err := ValidateCreate(c)
			checkViolations(t, err, tt.want, fmt.Sprintf("a cluster has at most %d", MaxNodes))

			old := validCluster(t)
			checkViolations(t, ValidateUpdate(old, c), tt.want, "split the hosts into several clusters")
		})
	}
}

func TestErrorsCapped(t *testing.T) {
	c := validCluster(t)
	c.Nodes = append(c.Nodes, manyNodes(500, true)...)
	errs := fieldErrors(t, ValidateCreate(c))
	if len(errs) != MaxReported+1 {
		t.Fatalf("%d entries, want %d (the first %d and one summary)", len(errs), MaxReported+1, MaxReported)
	}
	last := errs[len(errs)-1]
	// 500 bad names, each reported twice (a bad label, then a duplicate
	// of w3's name from the second on): 999 violations, 100 shown.
	if last.Field != "" || !strings.HasPrefix(last.Reason, "…and 899 more") {
		t.Fatalf("last entry = %+v, want \"…and 899 more\" without a field", last)
	}
	msg := errs.Error()
	if n := strings.Count(msg, "; nodes["); n != MaxReported-1 {
		t.Fatalf("message holds %d node violations after the first, want %d", n, MaxReported-1)
	}
	if !strings.HasSuffix(msg, "; "+last.Reason) {
		t.Fatalf("message does not end with the summary: …%s", msg[len(msg)-200:])
	}
}

func TestErrorsErrorCapsLongLists(t *testing.T) {
	tests := []struct {
		n        int
		wantMore string
	}{
		{MaxReported, ""},
		{MaxReported + 1, ""},
		{MaxReported + 2, "…and 2 more"},
		{5000, "…and 4900 more"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			errs := make(Errors, tt.n)
			for i := range errs {
				errs[i] = FieldError{Field: index("nodes", i), Reason: "bad"}
			}
			msg := errs.Error()
			parts := strings.Split(msg, "; ")
			switch {
			case tt.wantMore == "" && len(parts) != tt.n:
				t.Fatalf("%d parts, want all %d", len(parts), tt.n)
			case tt.wantMore != "" && (len(parts) != MaxReported+1 || !strings.HasPrefix(parts[MaxReported], tt.wantMore)):
				t.Fatalf("%d parts ending %q, want %d ending %q", len(parts), parts[len(parts)-1], MaxReported+1, tt.wantMore)
			}
			if len(errs) != tt.n {
				t.Fatalf("Error() changed the list: %d entries", len(errs))
			}
		})
	}
}

func TestViolationTextBounded(t *testing.T) {
	c := validCluster(t)
	huge := strings.Repeat("é", 100000)
	c.Nodes[0].Labels = map[string]string{"zone": huge, huge: "a"}
	errs := fieldErrors(t, ValidateCreate(c))
	if len(errs) != 2 {
		t.Fatalf("violations %q, want 2", errs.Fields())
	}
	for _, fe := range errs {
		if len(fe.Field) > maxFieldLen || len(fe.Reason) > maxReasonLen {
			t.Fatalf("violation of %d+%d bytes, want at most %d+%d", len(fe.Field), len(fe.Reason), maxFieldLen, maxReasonLen)
		}
		if !utf8.ValidString(fe.Field) || !utf8.ValidString(fe.Reason) || !strings.HasSuffix(fe.Reason, "…") {
			t.Fatalf("cut badly: %q", fe.Reason[len(fe.Reason)-20:])
		}
	}
	if !strings.HasPrefix(errs[1].Field, `nodes[0].labels["éé`) {
		t.Fatalf("field %q does not start with the path", errs[1].Field)
	}
}
