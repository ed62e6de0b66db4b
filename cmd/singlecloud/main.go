// Command singlecloud is the singlecloud server: with no flags it serves the
// REST API on :8080 with its state in ./singlecloud.db. --help explains the
// flags and --version prints the build; both exit 0.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "singlecloud: %v\n", err)
		os.Exit(2)
	}
	switch cfg.Action {
	case actionHelp:
		fmt.Fprint(os.Stdout, cfg.Usage)
		return
	case actionVersion:
		fmt.Fprint(os.Stdout, versionText(buildVersion()))
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "singlecloud: %v\n", err)
		stop()
		os.Exit(1)
	}
}
