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

func (b *bed) testEnsure(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	spec := sleeper("svc")
	spec.Env = []string{"GEN=1"}

	act, err := d.Ensure(ctx, spec)
	if err != nil || act != runtime.ActionCreated {
		t.Fatalf("first Ensure = %s, %v; want created", act, err)
	}
	first, err := d.Inspect(ctx, "svc")
	if err != nil {
		t.Fatal(err)
	}
	if !first.Running || !first.Managed() || first.Cluster() != "c1" || len(first.SpecHash()) != 64 || first.StartedAt.IsZero() {
		t.Errorf("created container: %+v", first)
	}
	if got := b.cli(t, "inspect", "-f", "{{.HostConfig.RestartPolicy.Name}}", "svc"); got != "unless-stopped" {
		t.Errorf("restart policy %q, want unless-stopped", got)
	}

	act, err = d.Ensure(ctx, spec)
	if err != nil || act != runtime.ActionNone {
		t.Fatalf("second Ensure = %s, %v; want none", act, err)
	}
	if again, _ := d.Inspect(ctx, "svc"); again.ID != first.ID || !again.StartedAt.Equal(first.StartedAt) {
		t.Errorf("an unchanged spec touched the container: %+v", again)
	}

	b.cli(t, "stop", "-t", "0", "svc")
	act, err = d.Ensure(ctx, spec)
	if err != nil || act != runtime.ActionStarted {
		t.Fatalf("Ensure of the stopped container = %s, %v; want started", act, err)
	}
	if again, _ := d.Inspect(ctx, "svc"); again.ID != first.ID || !again.Running {
		t.Errorf("after start: %+v, want the same container running", again)
	}

	// A changed spec whose image is missing leaves the old container be.
	broken := spec
	broken.Image = "singlecloud.test/absent:2"
	var missing *runtime.ImageMissingError
	if _, err := d.Ensure(ctx, broken); !errors.As(err, &missing) {
		t.Fatalf("Ensure with a missing image = %v", err)
	}
	if again, _ := d.Inspect(ctx, "svc"); again.ID != first.ID || !again.Running {
		t.Errorf("a failed replace touched the container: %+v", again)
	}

	spec.Env = []string{"GEN=2"}
	act, err = d.Ensure(ctx, spec)
	if err != nil || act != runtime.ActionReplaced {
		t.Fatalf("Ensure of a changed spec = %s, %v; want replaced", act, err)
	}
	replaced, err := d.Inspect(ctx, "svc")
	if err != nil || replaced.ID == first.ID || !replaced.Running || replaced.SpecHash() == first.SpecHash() {
		t.Errorf("replaced container: %+v, %v", replaced, err)
	}
	if _, err := d.Inspect(ctx, first.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("the old container is still there: %v", err)
	}
	if got := b.cli(t, "exec", "svc", "sh", "-c", "echo $GEN"); got != "2" {
		t.Errorf("GEN=%q in the new container, want 2", got)
	}

	if err := d.Remove(ctx, "svc"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Inspect(ctx, "svc"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("after Remove: %v", err)
	}
	if err := d.Remove(ctx, "svc"); err != nil {
		t.Errorf("second Remove = %v, want nil", err)
	}
}

func (b *bed) testEnsureStopped(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	spec := runtime.ContainerSpec{Name: "exits", Image: testbed.BusyboxImage, Cmd: []string{"sh", "-c", "exit 7"}, RestartPolicy: "no"}
	if act, err := d.Ensure(ctx, spec); err != nil || act != runtime.ActionCreated {
		t.Fatalf("Ensure = %s, %v", act, err)
	}
	info := waitExited(t, d, "exits")
	if info.ExitCode != 7 || info.FinishedAt.IsZero() || info.Status != "exited" {
		t.Errorf("exited container: %+v, want exit code 7", info)
	}
	if act, err := d.Ensure(ctx, spec); err != nil || act != runtime.ActionStarted {
		t.Errorf("Ensure of the exited container = %s, %v; want started", act, err)
	}
	if again := waitExited(t, d, "exits"); again.ID != info.ID || !again.StartedAt.After(info.StartedAt) {
		t.Errorf("restarted container: %+v, want the same one started again", again)
	}
	if err := d.Remove(ctx, "exits"); err != nil {
		t.Fatal(err)
	}
}

// Stop delivers SIGTERM and waits for the container to exit by itself
// (exit code 3 from its trap, not 137 from a SIGKILL); stopping a stopped
// or missing container is not an error.
func (b *bed) testStop(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	spec := runtime.ContainerSpec{Name: "drains", Image: testbed.BusyboxImage, RestartPolicy: "no",
		Cmd: []string{"sh", "-c", "trap 'exit 3' TERM; while true; do sleep 1; done"}}
	if _, err := d.Ensure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, "drains", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	info, err := d.Inspect(ctx, "drains")
	if err != nil || info.Running || info.ExitCode != 3 {
		t.Errorf("after Stop: %+v, %v; want exited with its trap's code 3", info, err)
	}
	if err := d.Stop(ctx, "drains", time.Second); err != nil {
		t.Errorf("Stop of a stopped container = %v", err)
	}
	if err := d.Remove(ctx, "drains"); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, "drains", time.Second); err != nil {
		t.Errorf("Stop of a missing container = %v", err)
	}
}

// waitExited polls until the container has stopped.
func waitExited(t *testing.T, d *runtime.Docker, name string) runtime.ContainerInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := d.Inspect(testCtx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Running && !info.FinishedAt.IsZero() {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still running: %+v", name, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bed) testForeign(t *testing.T) {
	d, other, ctx := b.docker(t, "c1"), b.docker(t, "c2"), testCtx(t)
	id := b.cli(t, "run", "-d", "--name", "foreign", testbed.BusyboxImage, "sleep", "3600")
	t.Cleanup(func() { b.cli(t, "rm", "-f", "foreign") })

	var fe *runtime.ForeignContainerError
	if _, err := d.Ensure(ctx, sleeper("foreign")); !errors.As(err, &fe) || fe.Owner != "" || fe.Name != "foreign" || !strings.Contains(err.Error(), "rename or remove it") {
		t.Errorf("Ensure over a foreign container = %v, want a ForeignContainerError", err)
	}
	if err := d.Remove(ctx, "foreign"); !errors.Is(err, runtime.ErrForeign) {
		t.Errorf("Remove of a foreign container = %v, want ErrForeign", err)
	}
	if _, err := d.RunJob(ctx, runtime.ContainerSpec{Name: "foreign", Image: testbed.BusyboxImage, Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrForeign) {
		t.Errorf("RunJob named like a foreign container = %v, want ErrForeign", err)
	}
	if got := b.cli(t, "inspect", "-f", "{{.Id}} {{.State.Running}} {{.RestartCount}}", "foreign"); got != id+" true 0" {
		t.Errorf("the foreign container was touched: %s", got)
	}

	// A zke container of another cluster is just as foreign.
	if _, err := other.Ensure(ctx, sleeper("theirs")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Ensure(ctx, sleeper("theirs")); !errors.As(err, &fe) || fe.Owner != "c2" {
		t.Errorf("Ensure over cluster c2's container = %v, want a ForeignContainerError owned by c2", err)
	}
	if err := d.Remove(ctx, "theirs"); !errors.Is(err, runtime.ErrForeign) {
		t.Errorf("Remove of c2's container from c1 = %v, want ErrForeign", err)
	}
	if err := other.Remove(ctx, "theirs"); err != nil {
		t.Fatal(err)
	}
}

func (b *bed) testRemoveAll(t *testing.T) {
	c1, c2, ctx := b.docker(t, "c1"), b.docker(t, "c2"), testCtx(t)
	for _, name := range []string{"c1-a", "c1-b"} {
		if _, err := c1.Ensure(ctx, sleeper(name)); err != nil {
			t.Fatal(err)
		}
	}
	stopped := runtime.ContainerSpec{Name: "c1-stopped", Image: testbed.BusyboxImage, Cmd: []string{"true"}, RestartPolicy: "no"}
	if _, err := c1.Ensure(ctx, stopped); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Ensure(ctx, sleeper("c2-a")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c2.RemoveAll(context.Background(), "c2") })
	foreignID := b.cli(t, "run", "-d", "--name", "bystander", "--label", "io.zke.cluster=c1", testbed.BusyboxImage, "sleep", "3600")
	t.Cleanup(func() { b.cli(t, "rm", "-f", "bystander") })

	list, err := c1.List(ctx, "c1")
	if err != nil || len(list) != 3 {
		t.Fatalf("List(c1) = %+v, %v; want 3 containers", list, err)
	}
	all, err := c1.List(ctx, "")
	if err != nil || len(all) != 4 {
		t.Fatalf("List() = %+v, %v; want zke's 4 containers", all, err)
	}
	if err := c1.RemoveAll(ctx, ""); !errors.Is(err, runtime.ErrInvalidSpec) {
		t.Errorf("RemoveAll without a cluster = %v, want ErrInvalidSpec", err)
	}
	if err := c1.RemoveAll(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if list, err := c1.List(ctx, "c1"); err != nil || len(list) != 0 {
		t.Errorf("after RemoveAll(c1): %+v, %v", list, err)
	}
	if list, err := c2.List(ctx, "c2"); err != nil || len(list) != 1 || list[0].Name != "c2-a" || list[0].State != "running" {
		t.Errorf("cluster c2 after RemoveAll(c1): %+v, %v", list, err)
	}
	if got := b.cli(t, "inspect", "-f", "{{.Id}} {{.State.Running}}", "bystander"); got != foreignID+" true" {
		t.Errorf("the foreign container was touched: %s", got)
	}
}

func (b *bed) testContainerLogs(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	spec := runtime.ContainerSpec{Name: "chatty", Image: testbed.BusyboxImage,
		Cmd: []string{"sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done; sleep 1; echo done >&2; sleep 3600"}}
	if _, err := d.Ensure(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Remove(context.Background(), "chatty") })
	deadline := time.Now().Add(20 * time.Second)
	for {
		logs, err := d.ContainerLogs(ctx, "chatty", 0)
		if err != nil {
			t.Fatal(err)
		}
		if string(logs) == "line1\nline2\nline3\nline4\nline5\ndone\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs %q", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if logs, err := d.ContainerLogs(ctx, "chatty", 2); err != nil || string(logs) != "line5\ndone\n" {
		t.Errorf("ContainerLogs(tail 2) = %q, %v", logs, err)
	}
	if _, err := d.ContainerLogs(ctx, "nonexistent", 2); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("ContainerLogs of a missing container = %v, want ErrNotFound", err)
	}
	// A TTY container's logs are not multiplexed.
	id := b.cli(t, "run", "-d", "-t", "--name", "tty", testbed.BusyboxImage, "sh", "-c", "echo tty-output; sleep 3600")
	t.Cleanup(func() { b.cli(t, "rm", "-f", id) })
	deadline = time.Now().Add(20 * time.Second)
	for {
		logs, err := d.ContainerLogs(ctx, "tty", 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(logs), "tty-output") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tty logs %q", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
