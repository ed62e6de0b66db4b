package snapshots

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateCluster(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"prod-1", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{"A", false},
		{"../x", false},
		{"a/b", false},
		{".scratch", false},
		{"-a", false},
		{"a-", false},
		{"a_b", false},
		{strings.Repeat("a", 64), false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		err := validateCluster(tt.name)
		if tt.ok && err != nil {
			t.Errorf("validateCluster(%q) = %v, want nil", tt.name, err)
		}
		if !tt.ok && (!errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "cluster")) {
			t.Errorf("validateCluster(%q) = %v, want ErrInvalidID naming the cluster", tt.name, err)
		}
	}
}

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"20261125-140102-3f9a", true},
		{"", false},
		{"A", false},
		{"../x", false},
		{"20261125-140102-3F9A", false},
		{"20261125-140102-3f9", false},
		{"20261125-140102-3f9a0", false},
		{"20261125-140102-3f9a/../x", false},
		{"20261125-140102-3f9a\n", false},
	}
	for _, tt := range tests {
		err := validateID(tt.id)
		if tt.ok && err != nil {
			t.Errorf("validateID(%q) = %v, want nil", tt.id, err)
		}
		if !tt.ok && (!errors.Is(err, ErrInvalidID) || !strings.Contains(err.Error(), "snapshot id")) {
			t.Errorf("validateID(%q) = %v, want ErrInvalidID naming the snapshot id", tt.id, err)
		}
	}
}

func TestNewID(t *testing.T) {
	at := time.Date(2026, 11, 25, 15, 1, 2, 0, time.FixedZone("CET", 3600))
	seen := map[string]bool{}
	for range 50 {
		id, err := newID(at)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateID(id); err != nil {
			t.Fatalf("newID made an invalid id: %v", err)
		}
		if !strings.HasPrefix(id, "20261125-140102-") {
			t.Fatalf("newID(%v) = %q, want the UTC time 20261125-140102", at, id)
		}
		seen[id] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 ids in one second gave only %d distinct ones: the random part is not random", len(seen))
	}
}
