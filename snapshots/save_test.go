package snapshots

import (
	"crypto/sha256"
	"errors"
	"testing"
)

func TestTrailerCheck(t *testing.T) {
	body := random(t, 3*512)
	sum := sha256.Sum256(body)
	good := append(body, sum[:]...)
	bad := append(random(t, 3*512), sum[:]...)
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"valid", good, true},
		{"hash of other data", bad, false},
		{"no hash", body, false},
		{"too short", sum[:10], false},
	}
	for _, tt := range tests {
		// Every write size: the hash must not depend on how src is read.
		for _, step := range []int{1, 7, 31, 32, 33, 100, 4096} {
			tc := &trailerCheck{h: sha256.New()}
			for p := tt.data; len(p) > 0; {
				n := min(step, len(p))
				tc.Write(p[:n])
				p = p[n:]
			}
			err := tc.verify(int64(len(tt.data)))
			if tt.ok && err != nil {
				t.Errorf("%s, writes of %d: %v", tt.name, step, err)
			}
			if !tt.ok && !errors.Is(err, ErrBadSnapshot) {
				t.Errorf("%s, writes of %d: %v, want ErrBadSnapshot", tt.name, step, err)
			}
		}
	}
}
