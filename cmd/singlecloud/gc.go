package main

import "runtime/debug"

// serverGCPercent is the collector's target for the server when GOGC is
// not set: between collections the heap may grow by half of what is live,
// instead of Go's default of as much again. Once its clusters are loaded
// the server's heap is mostly long-lived (cluster records, the rendered
// list) and it allocates little while idle, so the extra collections cost
// little CPU, while the default keeps memory as large as the live heap
// unused: at 1,000 stored clusters the idle RSS is 3–5 MB lower (issue 11,
// measured by test/bench/listbench). A collection costs in proportion to
// what is live, so a burst of allocation (the load at start-up, rendering
// the whole list after a change) runs about twice as many of them; the
// start-up numbers in README.md are measured with it. GOGC in the
// environment wins, as does GOMEMLIMIT for the limit (not set here: a
// sensible limit depends on the host, not on singlecloud).
const serverGCPercent = 50

// tuneGC sets serverGCPercent unless the environment sets GOGC. It is
// called once, before the server starts; the command line keeps Go's
// default (it is short-lived).
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(serverGCPercent)
}
