package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

func (b *bed) testRunJob(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	res, err := d.RunJob(ctx, runtime.ContainerSpec{Name: "job", Image: testbed.BusyboxImage,
		Cmd: []string{"sh", "-c", "echo hi; echo oops >&2; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.Contains(string(res.Logs), "hi\n") || !strings.Contains(string(res.Logs), "oops\n") || res.LogsTruncated {
		t.Errorf("RunJob = %+v (logs %q), want exit code 3 and both lines", res, res.Logs)
	}
	var ee *runtime.ExitError
	if err := res.Err(); !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(err.Error(), "oops") || !strings.Contains(err.Error(), b.h.Name) {
		t.Errorf("Err() = %v, want an ExitError with code 3, the node and the logs", err)
	}
	if _, err := d.Inspect(ctx, "job"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the job container was not removed: %v", err)
	}

	// An unnamed job with a lot of output: the tail is kept.
	res, err = d.RunJob(ctx, runtime.ContainerSpec{Image: testbed.BusyboxImage,
		Cmd: []string{"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo END"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Err() != nil || !res.LogsTruncated || len(res.Logs) != 1<<20 || !strings.HasSuffix(string(res.Logs), "aaa\nEND\n") {
		t.Errorf("big job: exit %d, truncated %v, %d bytes ending %q", res.ExitCode, res.LogsTruncated, len(res.Logs), res.Logs[max(0, len(res.Logs)-10):])
	}
	if !strings.HasPrefix(res.Name, "zke-job-") {
		t.Errorf("generated job name %q", res.Name)
	}
	if list, err := d.List(ctx, "c1"); err != nil || len(list) != 0 {
		t.Errorf("containers left after jobs: %+v, %v", list, err)
	}

	// A job container left behind by a killed run is replaced.
	if _, err := d.Ensure(ctx, runtime.ContainerSpec{Name: "job", Image: testbed.BusyboxImage, Cmd: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RunJob(ctx, runtime.ContainerSpec{Name: "job", Image: testbed.BusyboxImage, Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrConflict) {
		t.Errorf("RunJob named like a zke component = %v, want ErrConflict", err)
	}
	if err := d.Remove(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	b.cli(t, "create", "--name", "job", "--label", "io.zke.managed=true", "--label", "io.zke.cluster=c1", "--label", "io.zke.job=true", testbed.BusyboxImage, "true")
	res, err = d.RunJob(ctx, runtime.ContainerSpec{Name: "job", Image: testbed.BusyboxImage, Cmd: []string{"echo", "again"}})
	if err != nil || string(res.Logs) != "again\n" {
		t.Errorf("RunJob over a leftover job = %+v, %v", res, err)
	}
}

func (b *bed) testRunJobCancel(t *testing.T) {
	d := b.docker(t, "c1")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	type result struct {
		res runtime.JobResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := d.RunJob(ctx, runtime.ContainerSpec{Name: "long-job", Image: testbed.BusyboxImage, Cmd: []string{"sleep", "3600"}})
		done <- result{res, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := d.Inspect(testCtx(t), "long-job")
		if err == nil && info.Running {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the job never ran: %+v, %v", info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunJob did not return within 10 s of the cancel")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("RunJob returned %s after the cancel, want < 5 s", took)
	}
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("RunJob after cancel = %+v, %v; want context.Canceled", r.res, r.err)
	}
	if _, err := d.Inspect(testCtx(t), "long-job"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the cancelled job container is still there: %v", err)
	}
}
