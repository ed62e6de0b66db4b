package testbed

import "errors"

var (
	// ErrMissing reports a prerequisite that is not installed or not built;
	// the wrapping message says how to get it.
	ErrMissing = errors.New("testbed prerequisite missing")
	// ErrNotReady reports a component that did not become ready within its
	// bound; the wrapping message names it and its log.
	ErrNotReady = errors.New("not ready")
	// ErrExited reports a component process that exited while it was
	// expected to run.
	ErrExited = errors.New("process exited")
)
