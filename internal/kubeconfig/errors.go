package kubeconfig

import (
	"errors"
	"strings"
)

// ErrInvalid classifies every refusal of Parse: errors.Is(err, ErrInvalid)
// holds for the Errors it returns.
var ErrInvalid = errors.New("invalid kubeconfig")

// FieldError is one violation, in the shape of validation.FieldError: the
// path of the offending field inside the request, like
// "kubeconfig.users[0].user.exec" (indexes count the YAML lists in file
// order), and what to do about it. Neither ever quotes the kubeconfig's
// values, so a FieldError is safe to show and log.
type FieldError struct {
	Field  string
	Reason string
}

// Error renders the violation as "field: reason".
func (e FieldError) Error() string { return e.Field + ": " + e.Reason }

// Is makes every FieldError match ErrInvalid.
func (e FieldError) Is(target error) bool { return target == ErrInvalid }

// Errors is every violation Parse found, in file order.
type Errors []FieldError

// Error joins the violations with "; ".
func (e Errors) Error() string {
	msgs := make([]string, len(e))
	for i, fe := range e {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap exposes each violation to errors.As.
func (e Errors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, fe := range e {
		errs[i] = fe
	}
	return errs
}

// Is makes Errors match ErrInvalid.
func (e Errors) Is(target error) bool { return target == ErrInvalid }

// collector gathers violations while Parse runs.
type collector struct{ errs Errors }

func (c *collector) add(field, reason string) {
	c.errs = append(c.errs, FieldError{Field: field, Reason: reason})
}

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}
