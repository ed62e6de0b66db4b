package auth

import (
	"errors"
	"fmt"
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

// checkProjects reports every project without a cluster and every project
// listed twice.
func checkProjects(projects []Project) error {
	var errs []error
	seen := map[Project]bool{}
	for i, p := range projects {
		field := fmt.Sprintf("projects[%d]", i)
		if p.Cluster == "" {
			errs = append(errs, &FieldError{Field: field + ".cluster", Message: "is required: name the cluster this project grants access to"})
			continue
		}
		if seen[p] {
			errs = append(errs, &FieldError{Field: field, Message: fmt.Sprintf("duplicates project {cluster %q, namespace %q}; list each project once", p.Cluster, p.Namespace)})
		}
		seen[p] = true
	}
	return errors.Join(errs...)
}
