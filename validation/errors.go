// Package validation checks cluster configurations before singlecloud acts
// on them (SPEC §4, seed 002): ValidateCreate for a new cluster,
// ValidateUpdate for a changed one, ValidateImport for an import request.
// The checks are pure functions — no I/O, no clock, no network — that run on
// configs the caller has already normalised with ApplyDefaults. Every
// violation is reported at once, each as a FieldError naming the field by
// its JSON path (nodes[2].roles), so that an admin can fix them all in one go
// (at most MaxReported, then a count of the rest). Every value that reaches
// a node's shell, a file zke writes or a file on the server is checked
// against an allowlist (allowlist.go, imageref.go, registry.go, paths.go);
// a cluster has at most MaxNodes nodes.
package validation

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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

// MaxReported bounds the violations one error reports: a config with
// thousands of bad entries gets the first MaxReported, then one last
// entry "…and N more", so that the answer stays small and readable.
const MaxReported = 100

// Bounds of one violation's text: a reason quotes the value it is about,
// and a field path may hold a map key, both of which come from the
// request; a pathological value is cut rather than echoed whole.
const (
	maxReasonLen = 1024
	maxFieldLen  = 512
)

// Errors is every violation found in one config, in the order the checks
// ran. The validators return it only when it is non-empty, and with at most
// MaxReported violations followed, when more were found, by a FieldError
// without a field saying how many were left out.
type Errors []FieldError

// Error joins the messages of the violations with "; ". A longer list than
// the validators return (MaxReported and the count of the rest) is cut the
// same way, so that every caller's message stays bounded.
func (e Errors) Error() string {
	shown := e
	if len(e) > MaxReported+1 {
		shown = append(e[:MaxReported:MaxReported], moreErrors(len(e)-MaxReported))
	}
	msgs := make([]string, len(shown))
	for i, fe := range shown {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "; ")
}

// moreErrors is the last entry of a cut list: n violations left out.
func moreErrors(n int) FieldError {
	return FieldError{Reason: fmt.Sprintf("…and %d more: fix the problems above and send the config again to see the rest", n)}
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

// collector gathers violations while a validator runs: the first
// MaxReported, and the count of the rest.
type collector struct {
	errs    Errors
	dropped int
}

// addf records a violation of field.
func (c *collector) addf(field, format string, args ...any) {
	if len(c.errs) >= MaxReported {
		c.dropped++
		return
	}
	c.errs = append(c.errs, FieldError{Field: shorten(field, maxFieldLen), Reason: shorten(fmt.Sprintf(format, args...), maxReasonLen)})
}

// shorten cuts s to at most max bytes, on a rune boundary, marking the cut
// with "…".
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// err returns the violations as an error, or a nil interface when there are
// none (never a typed nil). When more than MaxReported were found, the last
// entry says how many were left out.
func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	if c.dropped > 0 {
		return append(c.errs, moreErrors(c.dropped))
	}
	return c.errs
}

// index builds the path of element i of the list field, like "nodes[2]".
func index(field string, i int) string {
	return fmt.Sprintf("%s[%d]", field, i)
}
