// Package durable holds the file-system steps that make a write survive a
// crash (kill -9, power loss): a rename or a new file is durable only once
// its directory's entry has reached the disk.
package durable

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir fsyncs directory dir, so that a rename into it, or a file
// created in it, survives a crash. A file system that cannot sync a
// directory (EINVAL, ENOTSUP: some network and FAT ones) has nothing more
// to do, and that is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}
