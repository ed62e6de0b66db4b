package main

import (
	"fmt"
	"log/slog"
	"syscall"

	"github.com/zdnscloud/singlecloud/server"
)

// raiseOpenFilesLimit raises the process's soft limit of open files
// (RLIMIT_NOFILE) to its hard limit, and returns the soft limit in force.
// Every websocket stream and every connection holds a descriptor, and the
// usual soft limit (1,024) is far below what the stream bounds and the
// REST connections need; the hard limit is what the administrator allows.
// Go raises it too at start on Linux; doing it here does not depend on
// that, and tells the limit. On failure the limit stays as it was, and is
// returned with the error.
func raiseOpenFilesLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("read the open files limit: %w", err)
	}
	if l.Cur >= l.Max {
		return uint64(l.Cur), nil
	}
	raised := syscall.Rlimit{Cur: l.Max, Max: l.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return uint64(l.Cur), fmt.Errorf("raise the open files limit from %d to %d: %w", l.Cur, l.Max, err)
	}
	return uint64(l.Max), nil
}

// raiseLimits raises the open files limit and logs, once at start, the
// stream bounds the server derives from it (server.DefaultStreamLimits).
func raiseLimits(log *slog.Logger) {
	files, err := raiseOpenFilesLimit()
	if err != nil {
		log.Warn("the open files limit stays as it is", "error", err)
	}
	l := server.DefaultStreamLimits(files)
	log.Info(fmt.Sprintf("streams: at most %d per user, %d per address, %d in all; open files limit %d",
		l.PerUser, l.PerAddress, l.Total, files))
}
