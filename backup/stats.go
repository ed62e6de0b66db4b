package backup

import (
	"fmt"
	"strings"

	"github.com/zdnscloud/singlecloud/storage"
)

// Stats counts the records of a backup, a restore or a migration.
type Stats struct {
	// Records is the number of keys, PerBucket the same by bucket.
	Records   int
	PerBucket map[storage.Bucket]int
	// Bytes is the size of the backup.
	Bytes int64
}

func (s *Stats) add(b storage.Bucket) {
	if s.PerBucket == nil {
		s.PerBucket = map[storage.Bucket]int{}
	}
	s.PerBucket[b]++
	s.Records++
}

// String says how many keys of each bucket, in the schema's order:
// "1042 keys (clusters 1000, users 2, settings 4, …)".
func (s Stats) String() string {
	var parts []string
	for _, b := range storage.Buckets() {
		if n := s.PerBucket[b]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", b, n))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d keys", s.Records)
	}
	return fmt.Sprintf("%d keys (%s)", s.Records, strings.Join(parts, ", "))
}
