package auth

import (
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/validation"
)

// maxNameLen bounds user names like a DNS-1123 label, so that a name fits
// in URLs, logs and Kubernetes objects unchanged.
const maxNameLen = 63

// msgName tells a client what a user name may look like.
const msgName = "must be 1-63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit"

// checkName reports whether name is a DNS-1123 label.
func checkName(name string) error {
	if len(name) == 0 || len(name) > maxNameLen {
		return &FieldError{Field: "name", Message: msgName}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1) {
			return &FieldError{Field: "name", Message: msgName}
		}
	}
	return nil
}

// checkProjects reports every project without a valid cluster name (the
// rule of package validation) or with a namespace that is neither a
// DNS-1123 label nor one of the spellings of every namespace. It returns
// the projects normalised: every namespace spelled NamespaceAll when it
// means every namespace, and each grant once, in the order first listed
// (the same grant listed twice, or as "" and "_all", is one grant).
func checkProjects(projects []Project) ([]Project, error) {
	var errs []error
	out := make([]Project, 0, len(projects))
	seen := map[Project]bool{}
	for i, p := range projects {
		field := fmt.Sprintf("projects[%d]", i)
		bad := false
		if p.Cluster == "" {
			errs = append(errs, &FieldError{Field: field + ".cluster", Message: "is required: name the cluster this project grants access to"})
			bad = true
		} else if err := validation.CheckClusterName(field+".cluster", p.Cluster); err != nil {
			errs = append(errs, fieldErrors(err)...)
			bad = true
		}
		if p.AllNamespaces() {
			p.Namespace = NamespaceAll
		} else if err := validation.CheckLabel(field+".namespace", "a namespace name", p.Namespace); err != nil {
			errs = append(errs, fieldErrors(err)...)
			bad = true
		}
		if bad || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ValidateProjects reports every project checkProjects refuses (field
// errors, ErrInvalid), without storing anything: a caller that refuses
// projects for its own reasons lists these with its own.
func ValidateProjects(projects []Project) error {
	_, err := checkProjects(projects)
	return err
}

// fieldErrors converts validation's field errors into this package's.
func fieldErrors(err error) []error {
	var ves validation.Errors
	if !errors.As(err, &ves) {
		return []error{err}
	}
	out := make([]error, 0, len(ves))
	for _, fe := range ves {
		out = append(out, &FieldError{Field: fe.Field, Message: fe.Reason})
	}
	return out
}
