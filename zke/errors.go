package zke

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels of the zke package, matched with errors.Is.
var (
	// errDisruptionBudget: an eviction was refused (429) because it
	// would violate a PodDisruptionBudget; a drain retries it until it
	// times out.
	errDisruptionBudget = errors.New("eviction refused by a PodDisruptionBudget")
	// errEtcdMemberGone: a member zke added is no longer in etcd's
	// member list.
	errEtcdMemberGone = errors.New("no longer in the etcd member list (removed by hand?)")
	// ErrForeignPath: a path zke writes on a node holds something zke
	// cannot prove it made (another install's etcd or kubelet data, a
	// file of the admin's). zke neither writes into it nor deletes it.
	// errors.As finds the *ForeignPathError, which names the path; the
	// *workflow.NodeError around it names the node and says what to do.
	ErrForeignPath = errors.New("not made by zke")
)

// ForeignPathError is a path on a node that zke would write into, or
// delete, but cannot prove it made (see ownership.go).
type ForeignPathError struct {
	// Path is the absolute path on the node.
	Path string
	// What says what is there: "a non-empty directory", "a file", ...;
	// empty when it was not looked at.
	What string
}

// Error reads "/var/lib/etcd is a non-empty directory not made by zke",
// or "/var/lib/etcd: not made by zke" when What is empty.
func (e *ForeignPathError) Error() string {
	if e.What == "" {
		return fmt.Sprintf("%s: %v", e.Path, ErrForeignPath)
	}
	return fmt.Sprintf("%s is %s %v", e.Path, e.What, ErrForeignPath)
}

// Unwrap returns ErrForeignPath.
func (e *ForeignPathError) Unwrap() error { return ErrForeignPath }

// problemList is several problems of one node, shown on one line and
// each matched by errors.Is/As.
type problemList []error

func (p problemList) Error() string {
	msgs := make([]string, len(p))
	for i, e := range p {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the problems.
func (p problemList) Unwrap() []error { return p }
