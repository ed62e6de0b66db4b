package validation

// CheckClusterName reports whether name is a valid cluster name (a
// DNS-1123 label), as Errors holding one FieldError for field, or nil.
// Other packages that take a cluster name (a user's project grants) call
// it, so that one rule decides what a cluster name is.
func CheckClusterName(field, name string) error {
	var c collector
	validateClusterName(&c, field, name)
	return c.err()
}

// CheckLabel reports whether name is a DNS-1123 label (a Kubernetes
// namespace name), as Errors holding one FieldError for field, or nil.
// what names the thing in the message ("a namespace").
func CheckLabel(field, what, name string) error {
	var c collector
	if p := labelProblem(name); p != "" {
		c.addf(field, "%s (%s is a DNS-1123 label)", p, what)
	}
	return c.err()
}
