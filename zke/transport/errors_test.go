package transport

import (
	"errors"
	"strings"
	"testing"
)

func TestNodeError(t *testing.T) {
	exit := &ExitError{Cmd: "docker ps", Code: 1, Stderr: "permission denied\n"}
	tests := []struct {
		name string
		err  *NodeError
		want string
		is   error
	}{
		{name: "with hint", err: &NodeError{Node: "n1", Address: "10.0.0.5:22", Op: "connect", Err: ErrUnreachable, Hint: "check n1"},
			want: "ssh n1 (10.0.0.5:22): connect: node unreachable: check n1", is: ErrUnreachable},
		{name: "exit error", err: &NodeError{Node: "n1", Address: "10.0.0.5:22", Op: "exec", Err: exit},
			want: `ssh n1 (10.0.0.5:22): exec: command "docker ps" exited with code 1: permission denied`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if tt.is != nil && !errors.Is(tt.err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.is)
			}
		})
	}
	var ee *ExitError
	if !errors.As(error(tests[1].err), &ee) || ee.Code != 1 {
		t.Fatalf("errors.As did not find the ExitError")
	}
}

func TestExitError(t *testing.T) {
	tests := []struct {
		name string
		err  *ExitError
		want string
	}{
		{name: "code", err: &ExitError{Cmd: "false", Code: 1}, want: `command "false" exited with code 1`},
		{name: "signal", err: &ExitError{Cmd: "sleep 9", Code: -1, Signal: "KILL"}, want: `command "sleep 9" killed by signal KILL`},
		{name: "long command shortened", err: &ExitError{Cmd: strings.Repeat("x", 500), Code: 2}, want: `command "` + strings.Repeat("x", maxErrCmd) + `..." exited with code 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}
