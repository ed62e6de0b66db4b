// Package validation checks cluster configurations before singlecloud acts
// on them (SPEC §4, seed 002): ValidateCreate for a new cluster,
// ValidateUpdate for a changed one, ValidateImport for an import request.
// The checks are pure functions — no I/O, no clock, no network — that run on
// configs the caller has already normalised with ApplyDefaults. Every
// violation is reported at once, each as a FieldError naming the field by
// its JSON path (nodes[2].roles), so that an admin can fix them all in one go.
package validation

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid classifies every validation failure: errors.Is(err, ErrInvalid)
// holds for the Errors and FieldError values this package returns, so the
// server can answer 422 InvalidOption without knowing their shape.
var ErrInvalid = errors.New("invalid cluster configuration")

// FieldError is one violation: the field it concerns and what is wrong with
// it, phrased so the admin knows what to change.
type FieldError struct {
	// Field is the JSON path of the field, like "name", "network.plugin" or
	// "nodes[2].roles"; "nodes" for rules about the node list as a whole.
	Field string
	// Reason says what is wrong and, where it helps, what to do. It never
	// carries secret values.
	Reason string
}

// Error renders the violation as "field: reason".
func (e FieldError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Is makes every FieldError match ErrInvalid.
func (e FieldError) Is(target error) bool { return target == ErrInvalid }

// Errors is every violation found in one config, in the order the checks
// ran. The validators return it only when it is non-empty.
type Errors []FieldError

// Error joins the messages of all violations with "; ".
func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, fe := range e {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap exposes each violation, so errors.As finds a FieldError.
func (e Errors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, fe := range e {
		errs[i] = fe
	}
	return errs
}

// Is makes Errors match ErrInvalid.
func (e Errors) Is(target error) bool { return target == ErrInvalid }

// Fields lists the paths of the violations, in order; handy for clients and
// tests that need to know which fields to highlight.
func (e Errors) Fields() []string {
	fields := make([]string, len(e))
	for i, fe := range e {
		fields[i] = fe.Field
	}
	return fields
}

// collector gathers violations while a validator runs.
type collector struct {
	errs Errors
}

// addf records a violation of field.
func (c *collector) addf(field, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
}

// err returns the violations as an error, or a nil interface when there are
// none (never a typed nil).
func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}

// index builds the path of element i of the list field, like "nodes[2]".
func index(field string, i int) string {
	return fmt.Sprintf("%s[%d]", field, i)
}
