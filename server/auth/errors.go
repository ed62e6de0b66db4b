package auth

import "errors"

var (
	// ErrBadCredentials reports an unknown user or a wrong password. The
	// two are not told apart, so a caller cannot probe for user names.
	ErrBadCredentials = errors.New("bad user name or password")
	// ErrInvalidToken reports a token that is malformed, not signed by
	// this install, signed with another algorithm, or names no user.
	ErrInvalidToken = errors.New("invalid token")
	// ErrExpiredToken reports a well-signed token past its expiry.
	ErrExpiredToken = errors.New("token expired")
	// ErrPermissionDenied reports an operation the rules forbid to
	// everyone, such as deleting the admin user.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrNotFound reports a user that does not exist.
	ErrNotFound = errors.New("user not found")
	// ErrDuplicate reports a create of a user name already in use.
	ErrDuplicate = errors.New("user already exists")
	// ErrConflict reports a password change that lost a race with
	// another change of the same user; the caller retries.
	ErrConflict = errors.New("the user changed meanwhile; retry")
	// ErrInvalid reports a request that breaks a field rule; it is matched
	// through *FieldError (errors.Is(err, ErrInvalid)).
	ErrInvalid = errors.New("invalid user")
)

// FieldError is one broken field rule, named by its JSON field path
// ("projects[1].cluster"). Several are returned together with errors.Join.
type FieldError struct {
	Field   string
	Message string
}

// Error renders the violation as "field: message".
func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap lets errors.Is(err, ErrInvalid) match every field error.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// FieldErrors returns every *FieldError in err's tree, in order, so that a
// caller can list all broken rules at once.
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *FieldError:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}
