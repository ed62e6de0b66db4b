package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCYieldsToGOGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	for _, tc := range []struct {
		gogc string
		want int
	}{
		{"", serverGCPercent},
		{"100", 100},
		{"off", 100}, // the runtime read GOGC at start; tuneGC leaves it alone
	} {
		debug.SetGCPercent(100)
		tuneGC(func(k string) string {
			if k == "GOGC" {
				return tc.gogc
			}
			return ""
		})
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: GC percent %d, want %d", tc.gogc, got, tc.want)
		}
	}
}
