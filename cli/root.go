package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// Exit codes, as kubectl's: 0 ok, 1 an error, 2 a usage error. A command
// stopped by SIGINT or SIGTERM before it was done (a wait, a logs -f)
// exits 1; a watch or events, which run until stopped, exit 0.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Streams are the command's world: its input and outputs and environment.
// Main passes the process's; tests pass buffers.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	Getenv func(string) string
}

// isTerminal reports whether s (a stream of Streams) is a terminal.
func isTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError is a command line that cannot be run as given (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitError ends the command with code after its message was printed
// (a failed operation followed with logs -f, a wait that timed out).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// globals are the flags every command takes.
type globals struct {
	server     string
	context    string
	configPath string
	insecure   bool
	caFile     string
}

// absPath is a flag holding a file path made absolute as it is parsed:
// the path is kept in the config (--certificate-authority), which must
// work from any directory.
type absPath struct{ p *string }

func (f absPath) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f absPath) Set(v string) error {
	if v == "" {
		*f.p = ""
		return nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return fmt.Errorf("make %s absolute: %w", v, err)
	}
	*f.p = abs
	return nil
}

func (f absPath) Type() string { return "string" }

// app is one run of the command line: its streams and global flags.
type app struct {
	Streams
	g globals
	// pollInterval is how often `cluster wait` reads the cluster when
	// the events websocket is not allowed (non-admins); 0 is 2 s.
	pollInterval time.Duration
	// retryLimit is how long logs -f retries a stream that brings no new
	// frame before it gives up; 0 is reconnectLimit.
	retryLimit time.Duration
}

// IsCommand reports whether a command line starting with arg is the
// command line's, for cmd/singlecloud to tell it from the server's flags:
// the server is what runs with no command, with flags only, or with
// `serve`. arg is a command, or one of the global flags (`singlecloud
// --context prod cluster list`), none of which the server has.
func IsCommand(arg string) bool {
	if name, ok := strings.CutPrefix(arg, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		switch name {
		case "server", "context", "config", "insecure-skip-tls-verify", "certificate-authority":
			return true
		}
		return false
	}
	return arg != "" && !strings.HasPrefix(arg, "-") && arg != "serve"
}

// Main runs the command line args (without the program name) and returns
// the exit code; it stops on SIGINT and SIGTERM.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, Getenv: os.Getenv})
}

// Run runs args with s and returns the exit code; errors go to s.Err.
func Run(ctx context.Context, args []string, s Streams) int {
	root := New(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return ExitError // Ctrl-C before it was done: the user knows
	}
	return report(s.Err, root, args, err)
}

// report prints err as its kind wants and returns the exit code. The kind
// is the error's type, never its text: an *exitError (already explained),
// an *APIError (the server's answer), a *usageError (the command line,
// cobra's own errors included: see typedUsage), else an error (1).
func report(w io.Writer, root *cobra.Command, args []string, err error) int {
	var (
		ee *exitError
		ae *APIError
		ue *usageError
	)
	switch {
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(w, printable("error: "+ee.msg))
		}
		return ee.code
	case errors.As(err, &ae):
		fmt.Fprintln(w, printable(renderAPIError(ae)))
		if hint := errorHint(ae); hint != "" {
			fmt.Fprintln(w, hint)
		}
		return ExitError
	case errors.As(err, &ue):
		fmt.Fprintf(w, "error: %s\nSee '%s --help' for usage.\n", printable(err.Error()), commandPath(root, args))
		return ExitUsage
	}
	fmt.Fprintln(w, printable("error: "+err.Error()))
	return ExitError
}

// commandPath names the command args ran, for the usage hint.
func commandPath(root *cobra.Command, args []string) string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return root.Name()
	}
	return cmd.CommandPath()
}

// fieldStart matches the start of one field's error in a message joining
// several with "; " (the API's validation errors): a JSON path and ": ".
var fieldStart = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*(\[[0-9]+\]|\.[a-zA-Z0-9_\-/]+)*: `)

// renderAPIError prints an API error as kubectl does, each field's error on
// its own line when the message names several.
func renderAPIError(e *APIError) string {
	if len(e.Fields) > 1 {
		lines := make([]string, len(e.Fields))
		for i, f := range e.Fields {
			lines[i] = f.Reason
			if f.Field != "" {
				lines[i] = f.Field + ": " + f.Reason
			}
		}
		return fmt.Sprintf("Error from server (%s):\n  %s", e.Code, strings.Join(lines, "\n  "))
	}
	// A server without the field list: the message joins them with "; ".
	parts := strings.Split(e.Message, "; ")
	var fields []string
	for _, p := range parts {
		if len(fields) > 0 && !fieldStart.MatchString(p) {
			fields[len(fields)-1] += "; " + p
			continue
		}
		fields = append(fields, p)
	}
	if len(fields) < 2 {
		return e.Error()
	}
	return fmt.Sprintf("Error from server (%s):\n  %s", e.Code, strings.Join(fields, "\n  "))
}

// errorHint says what to do about some API errors.
func errorHint(e *APIError) string {
	switch e.Code {
	case "Unauthorized":
		return "hint: log in again with 'singlecloud login'"
	case "PermissionDenied":
		return "hint: 'singlecloud whoami' shows who you are; ask the admin for a grant"
	}
	return ""
}

// New builds the command tree on s.
func New(s Streams) *cobra.Command {
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	a := &app{Streams: s}
	root := &cobra.Command{
		Use:   "singlecloud",
		Short: "singlecloud's command line: clusters, logs, users, through the REST API",
		Long: `singlecloud <command> talks to a singlecloud server through its REST API.
Run 'singlecloud login --server URL --user NAME' first; 'singlecloud serve'
(or singlecloud with flags only) starts the server itself.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} })
	pf := root.PersistentFlags()
	pf.StringVar(&a.g.server, "server", "", "the server's URL (http:// or https://); default: the context's")
	pf.StringVar(&a.g.context, "context", "", "the context to use (default: the current one)")
	pf.StringVar(&a.g.configPath, "config", "", "the CLI's config file (default: $SINGLECLOUD_CONFIG or <user config dir>/singlecloud/config.yaml)")
	pf.BoolVar(&a.g.insecure, "insecure-skip-tls-verify", false, "do not check the server's certificate (insecure)")
	pf.Var(absPath{&a.g.caFile}, "certificate-authority", "PEM file of the CA that signed the server's certificate")
	root.AddCommand(
		&cobra.Command{Use: "serve [flags]", Short: "Start the server (the same as singlecloud with flags only; see singlecloud --help)",
			DisableFlagParsing: true, RunE: func(*cobra.Command, []string) error {
				return usageErrorf("serve is run by cmd/singlecloud")
			}},
		a.loginCmd(), a.logoutCmd(), a.whoamiCmd(), a.configCmd(),
		a.clusterCmd(), a.eventsCmd(), a.userCmd(), a.hostCmd(), a.environmentCmd(), a.appCmd(),
		a.snapshotCmd(), a.certificatesCmd(), a.backupCmd(),
	)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	typedUsage(root)
	return root
}

// typedUsage makes the usage errors cobra would make untyped (an unknown
// command, a wrong number of arguments, a missing required flag) usage
// errors where they arise, for cmd and the commands under it: a group (a
// command with subcommands and no Run) runs, to print its help without
// arguments and refuse any as an unknown command; a command's Args is
// wrapped to return a *usageError and to check its required flags and
// flag groups (which cobra checks only after, untyped). Flag parsing
// errors are typed by the root's FlagErrorFunc.
func typedUsage(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		typedUsage(sub)
	}
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = unknownCommand
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		return
	}
	if !cmd.Runnable() || cmd.DisableFlagParsing {
		return
	}
	check := cmd.Args
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if check != nil {
			if err := check(cmd, args); err != nil {
				return asUsage(err)
			}
		}
		if err := cmd.ValidateRequiredFlags(); err != nil {
			return asUsage(err)
		}
		if err := cmd.ValidateFlagGroups(); err != nil {
			return asUsage(err)
		}
		return nil
	}
}

// unknownCommand is the Args of a group: any argument is a command it
// does not have.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if sugg := cmd.SuggestionsFor(args[0]); len(sugg) > 0 && !cmd.DisableSuggestions {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(sugg, "\n\t")
	}
	return &usageError{msg: msg}
}

// asUsage is err as a *usageError (err is an argument validator's).
func asUsage(err error) error {
	var ue *usageError
	if errors.As(err, &ue) {
		return err
	}
	return &usageError{msg: err.Error()}
}

// exactArgs is cobra.ExactArgs with usage errors and argument names.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			if len(names) == 0 {
				return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return usageErrorf("%s needs %s (%d argument(s)), got %d", cmd.CommandPath(), strings.Join(names, " "), len(names), len(args))
		}
		return nil
	}
}
