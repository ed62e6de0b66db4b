package hosts

import (
	"fmt"
	"unicode/utf8"

	"github.com/zdnscloud/singlecloud/storage"
)

// Bounds of what the command records keep. maxOutputBytes (commands.go)
// caps each stream of each host as the transport reads it; these cap a
// record as a whole and all the records together, so that a command on
// many hosts, repeated, cannot fill the database: at 128 KiB per host, one
// command on 20 hosts was a 2.6 MB record, and the 200 kept records at 100
// hosts each would have been 2.6 GB.
const (
	// maxRecordOutputBytes caps the output one record keeps, shared
	// evenly by its hosts' streams: each keeps at most
	// maxRecordOutputBytes/(2×hosts), and never more than maxOutputBytes.
	// A command on up to 8 hosts keeps each one's 64 KiB; on 20 hosts,
	// about 25 KiB each; on 100, about 5 KiB.
	maxRecordOutputBytes = 1 << 20
	// maxStoredCommandBytes caps the records together, as stored (JSON
	// escaping included): at least 32 full records, far fewer bytes than
	// keptCommands of them could reach. When a write goes beyond it, the
	// oldest finished records are dropped.
	maxStoredCommandBytes = 32 << 20
)

// hostOutputShare is what each stream of each host of a command on n
// hosts keeps in its record.
func hostOutputShare(n int) int {
	return min(maxOutputBytes, maxRecordOutputBytes/(2*max(n, 1)))
}

// truncatedMarker is the line that says, in a record's output, that some
// of it was dropped: which end of the stream is kept, and how much.
func truncatedMarker(which, stream string, share int) string {
	return fmt.Sprintf("[output truncated: singlecloud keeps the %s %s of each host's %s in a command's record (%s per command, shared by its hosts)]",
		which, byteSize(share), stream, byteSize(maxRecordOutputBytes))
}

// byteSize shows n bytes in KiB or MiB when it is a whole number of them.
func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// capResult cuts r's output to share bytes per stream, on character
// boundaries: stdout keeps its first bytes (how the command started),
// stderr its last (why it failed), as the transport keeps them. A cut
// stream gets the marker line, after stdout and before stderr, and r is
// marked Truncated. A stream the transport already cut (r.Truncated, and
// as long as its cap) gets the marker too.
func capResult(r CommandResult, share int) CommandResult {
	cutBefore := r.Truncated
	if len(r.Stdout) > share || (cutBefore && len(r.Stdout) >= maxOutputBytes) {
		r.Stdout = r.Stdout[:completeUTF8([]byte(r.Stdout[:min(share, len(r.Stdout))]))]
		r.Stdout += "\n" + truncatedMarker("first", "stdout", share) + "\n"
		r.Truncated = true
	}
	if len(r.Stderr) > share || (cutBefore && len(r.Stderr) >= maxOutputBytes) {
		tail := r.Stderr[len(r.Stderr)-min(share, len(r.Stderr)):]
		for n := 0; n < utf8.UTFMax-1 && tail != "" && !utf8.RuneStart(tail[0]); n++ {
			tail = tail[1:]
		}
		r.Stderr = truncatedMarker("last", "stderr", share) + "\n" + tail
		r.Truncated = true
	}
	return r
}

// pruneCommands drops the oldest records of tx while there are more than
// maxCount or they take more than maxBytes as stored. Never dropped: keep
// (the record being written) and the records of the commands still
// running (running reports them), which their followers read when they
// end. The total may so exceed maxBytes by those, which are small while
// they run (no results yet).
func pruneCommands(tx storage.Tx, keep string, running func(id string) bool, maxCount, maxBytes int) error {
	rows, err := tx.List(storage.BucketHostCommands)
	if err != nil {
		return err
	}
	total, count := 0, len(rows)
	for _, kv := range rows {
		total += len(kv.Value)
	}
	for _, kv := range rows { // oldest first: the ids are time-ordered
		if count <= maxCount && total <= maxBytes {
			return nil
		}
		if kv.Key == keep || running(kv.Key) {
			continue
		}
		if err := tx.Delete(storage.BucketHostCommands, kv.Key); err != nil {
			return err
		}
		total -= len(kv.Value)
		count--
	}
	return nil
}
