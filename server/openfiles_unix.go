//go:build unix

package server

import "syscall"

// openFilesLimit is the process's RLIMIT_NOFILE soft limit, which the
// default total of streams derives from; 0 if it cannot be read.
func openFilesLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return uint64(l.Cur)
}
