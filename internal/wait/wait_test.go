package wait

import (
	"context"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("a pause with a live context reported its context ended")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("a pause with an ended context reported it passed")
	}
	if time.Since(start) > time.Minute {
		t.Error("a pause with an ended context waited")
	}
}
