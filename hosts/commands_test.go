package hosts

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

// fakeExecutor records the command lines it is handed and answers per
// host: exit 3 on "h2", unreachable on "h3".
type fakeExecutor struct{ lines chan string }

func (f fakeExecutor) Exec(ctx context.Context, t Target, cmd string) (transport.ExecResult, error) {
	f.lines <- t.Name + ": " + cmd
	switch t.Name {
	case "h2":
		return transport.ExecResult{Stderr: []byte("no")}, &transport.NodeError{Node: t.Name, Op: "exec", Err: &transport.ExitError{Code: 3}}
	case "h3":
		return transport.ExecResult{}, &transport.NodeError{Node: t.Name, Op: "connect", Err: errors.New("connection refused")}
	}
	return transport.ExecResult{Stdout: []byte("hi\n")}, nil
}

// A command runs on every host its selector matches, quoted word by word,
// and its record says who ran what where and each host's result; bad
// requests name the field and run nothing.
func TestRunCommand(t *testing.T) {
	store := storagetest.Open(t)
	fe := fakeExecutor{lines: make(chan string, 10)}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}, Executor: fe})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := testKey(t)
	for i, n := range []string{"h1", "h2", "h3", "other"} {
		group := "e2e"
		if n == "other" {
			group = "prod"
		}
		if _, err := m.Create(ctx, model.HostSpec{Name: n, Address: "10.0.0." + string(rune('1'+i)), SSHKey: key, Labels: map[string]string{"group": group}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		name, selector string
		req            CommandRequest
		field          string
	}{
		{"", "group=e2e", CommandRequest{}, "command"},
		{"", "group=e2e", CommandRequest{Command: []string{"true"}, TimeoutSeconds: 7200}, "timeoutSeconds"},
		{"", "group in (", CommandRequest{Command: []string{"true"}}, "selector"},
		{"", "group=none", CommandRequest{Command: []string{"true"}}, "selector"},
	} {
		_, err := m.RunCommand(ctx, "admin", bad.name, bad.selector, bad.req)
		var verrs validation.Errors
		if !errors.As(err, &verrs) || verrs[0].Field != bad.field {
			t.Errorf("RunCommand(%q, %+v) = %v, want an error naming %s", bad.selector, bad.req, err, bad.field)
		}
	}
	if _, err := m.RunCommand(ctx, "admin", "nope", "", CommandRequest{Command: []string{"true"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("a command on an unknown host = %v", err)
	}

	rec, err := m.RunCommand(ctx, "alice", "", "group=e2e", CommandRequest{Command: []string{"echo", "it's $HOME; rm -rf /"}})
	if err != nil || rec.State != "Running" || strings.Join(rec.Hosts, ",") != "h1,h2,h3" || rec.StartedBy != "alice" {
		t.Fatalf("RunCommand = %+v, %v", rec, err)
	}
	for range 3 {
		if line := <-fe.lines; !strings.HasSuffix(line, `: 'echo' 'it'\''s $HOME; rm -rf /'`) {
			t.Errorf("command line %s: the argv was not quoted word by word", line)
		}
	}
	m.cmdWG.Wait()
	if rec, err = m.Command(rec.ID); err != nil {
		t.Fatal(err)
	}
	byHost := map[string]CommandResult{}
	for _, r := range rec.Results {
		byHost[r.Host] = r
	}
	if r := byHost["h1"]; rec.State != "Finished" || r.ExitCode != 0 || r.Stdout != "hi\n" {
		t.Errorf("h1: %+v (state %s)", r, rec.State)
	}
	if r := byHost["h2"]; r.ExitCode != 3 || r.Stderr != "no" || r.Error != "" {
		t.Errorf("h2: %+v, want exit code 3 with its stderr", r)
	}
	if r := byHost["h3"]; r.ExitCode != -1 || !strings.Contains(r.Error, "connection refused") {
		t.Errorf("h3: %+v, want -1 and why", r)
	}
	if list, err := m.Commands(); err != nil || len(list) != 1 || list[0].ID != rec.ID {
		t.Errorf("Commands = %d records, %v", len(list), err)
	}
	if _, err := m.Command("nope"); !errors.Is(err, ErrCommandNotFound) {
		t.Errorf("an unknown command = %v", err)
	}
}
