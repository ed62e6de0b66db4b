// Package cli is singlecloud's command line (`singlecloud <command>`): a
// client of the REST API and its websockets, and nothing else, so that
// whatever the command line can do a script with curl can do too and the
// server keeps one way in (issue 11).
//
// Libraries, and why each was added:
//
//   - github.com/spf13/cobra: the command tree, flags (pflag), help and
//     shell completion, as kubectl and clusterctl use it, so that the
//     conventions (-o, --watch, `completion bash`) behave as admins expect.
//   - sigs.k8s.io/yaml (already a dependency): YAML in and out through the
//     API's JSON tags, so `-o yaml` and `apply -f` accept the same fields as
//     the JSON API, YAML or JSON alike.
//   - golang.org/x/term: reads the password at the prompt without echo and
//     tells a terminal (progress bar, prompt) from a pipe.
//   - github.com/schollz/progressbar/v3: the live progress bar of
//     `cluster logs -f` (step k/N, percent, ETA, node), maintained and
//     terminal-width aware.
//   - github.com/creack/pty (test/e2e only): runs the binary in a
//     pseudo-terminal, as a person would, to check the password prompt
//     (no echo) and the progress bar.
//
// The command tree is built by New from a Streams value: no package-level
// mutable state: each run (each test) has its own streams and flags.
// Secrets (the token, passwords, kubeconfigs) are never printed except a
// kubeconfig asked for on stdout, and never logged.
package cli
