// Command pause is the testbed's pod sandbox process: a tiny static program
// that does nothing but wait. It exits 0 on SIGTERM or SIGINT and, because it
// runs as PID 1 of a pod's PID namespace, reaps every child that gets
// reparented to it so no zombie outlives its container.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking; several SIGCHLDs may
// arrive as one, so it loops until no exited child is left.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
