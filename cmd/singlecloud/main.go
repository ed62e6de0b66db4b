// Command singlecloud is the singlecloud server: with no flags it serves the
// REST API on :8080 with its files in ./singlecloud-data. --help explains the
// flags and --version prints the build; both exit 0. With a command
// (`singlecloud login`, `singlecloud cluster list`, ...) it is the command
// line of package cli, a client of that API; `singlecloud serve [flags]`
// is the server too.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/zdnscloud/singlecloud/cli"
)

func main() {
	args := os.Args[1:]
	switch {
	case len(args) > 0 && args[0] == "serve":
		args = args[1:]
	case len(args) > 0 && isStoreCommand(args):
		os.Exit(storeCommandMain(args))
	case len(args) > 0 && cli.IsCommand(args[0]):
		os.Exit(cli.Main(args))
	}
	cfg, err := parseConfig(args, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "singlecloud: %v\n", err)
		os.Exit(2)
	}
	switch cfg.Action {
	case actionHelp:
		fmt.Fprint(os.Stdout, cfg.Usage)
		fmt.Fprint(os.Stdout, commandsHint)
		return
	case actionVersion:
		fmt.Fprint(os.Stdout, versionText(buildVersion()))
		return
	}
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "singlecloud: %v\n", err)
		stop()
		os.Exit(1)
	}
}

// commandsHint ends the server's --help: the same binary is the command
// line too.
const commandsHint = `
Commands (the command line, a client of the API): singlecloud help
  login, logout, whoami, config, cluster, events, user, snapshot,
  certificates, host, environment, app, backup, completion;
  singlecloud backup|restore|migrate work on the database itself;
  singlecloud artifacts list|fetch: what a cluster needs from outside;
  singlecloud serve [flags] is the server, as with flags only.
`
