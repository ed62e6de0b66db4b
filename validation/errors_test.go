package validation

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldErrorError(t *testing.T) {
	tests := []struct {
		name string
		err  FieldError
		want string
	}{
		{"with field", FieldError{Field: "nodes[2].roles", Reason: "controlplane and worker are exclusive"}, "nodes[2].roles: controlplane and worker are exclusive"},
		{"without field", FieldError{Reason: "bad"}, "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Fatalf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrorsClassification(t *testing.T) {
	errs := Errors{
		{Field: "name", Reason: "is required: give the cluster a name"},
		{Field: "nodes[0].address", Reason: "is required"},
	}
	tests := []struct {
		name string
		err  error
	}{
		{"bare", errs},
		{"wrapped", fmt.Errorf("create cluster prod: %w", errs)},
		{"joined", errors.Join(errors.New("other"), errs)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, ErrInvalid) {
				t.Errorf("errors.Is(%v, ErrInvalid) = false", tt.err)
			}
			var fe FieldError
			if !errors.As(tt.err, &fe) || fe != errs[0] {
				t.Errorf("errors.As FieldError = %v, want %v", fe, errs[0])
			}
			var all Errors
			if !errors.As(tt.err, &all) || len(all) != 2 {
				t.Errorf("errors.As Errors = %v, want both violations", all)
			}
		})
	}
	if got, want := errs.Error(), "name: is required: give the cluster a name; nodes[0].address: is required"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(errs[1], ErrInvalid) {
		t.Errorf("a single FieldError does not match ErrInvalid")
	}
	if errors.Is(errors.New("other"), ErrInvalid) {
		t.Errorf("an unrelated error matches ErrInvalid")
	}
}

func TestCollectorReturnsUntypedNil(t *testing.T) {
	var c collector
	if err := c.err(); err != nil {
		t.Fatalf("empty collector: err() = %#v, want a nil interface", err)
	}
	c.addf("sshPort", "%d is out of range", 0)
	err := c.err()
	if err == nil || err.Error() != "sshPort: 0 is out of range" {
		t.Fatalf("err() = %v, want the recorded violation", err)
	}
}
