//go:build !unix

package server

// openFilesLimit is unknown here: the default total of streams is then
// DefaultMaxStreams.
func openFilesLimit() uint64 { return 0 }
