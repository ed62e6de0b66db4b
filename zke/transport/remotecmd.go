package transport

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// How a remote command is made killable. Without a pty, closing an SSH
// session does not signal the command, and a server may ignore "signal"
// requests (OpenSSH honours them since 7.9, with killpg on the session's
// process group). So every command Exec sends:
//
//   - runs with the environment variable execIDVar set to a fresh random id,
//     which every process it starts inherits; a "kill scan" (killScript)
//     finds them all through /proc/<pid>/environ and kills them, wherever
//     they are in the process tree and whatever their process group;
//   - when the caller gives no stdin, runs with stdin from /dev/null while a
//     watcher reads the session's stdin, which the client never closes:
//     end of file means the session or the connection has gone (cancel,
//     client crash, network cut), and the watcher runs the kill scan.
//
// The user's command is run by /bin/sh; the login shell only has to
// understand `exec env ...` with single quotes (any POSIX shell does).

// execIDVar marks the processes of one Exec.
const execIDVar = "ZKE_EXEC_ID"

// watchedScript is run as `sh -c watchedScript zke-exec <cmd> <killScript>`.
// Fd 3 keeps the session's stdin, because an asynchronous list gets
// /dev/null as stdin before its own redirections.
const watchedScript = `exec 3<&0
{ while read -r x; do :; done; exec env -u ` + execIDVar + ` sh -c "$2" zke-kill "$` + execIDVar + `"; } <&3 >/dev/null 2>&1 &
w=$!
sh -c "$1" </dev/null 3<&-
rc=$?
kill "$w" 2>/dev/null
exit "$rc"`

// killScript is run as `sh -c killScript zke-kill <id>` by a process whose
// environment lacks the id (so that it never kills itself). It repeats
// the scan while it finds processes, to catch children forked meanwhile.
const killScript = `i=0
while [ "$i" -lt 10 ]; do
	p=$(grep -l -F -e "` + execIDVar + `=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
	[ -n "$p" ] || exit 0
	kill -KILL $p 2>/dev/null
	i=$((i+1))
done
exit 1`

// envName is what an environment variable name passed to Exec may be.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// newExecID returns a random id that no other process carries by chance.
func newExecID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand since Go 1.24)
	return hex.EncodeToString(b)
}

// remoteCommand builds the command line Exec sends for cmd. watched says
// that the session's stdin is free to be watched (the caller gave none).
func remoteCommand(id, cmd string, env map[string]string, watched bool) (string, error) {
	var b strings.Builder
	b.WriteString("exec env " + execIDVar + "=" + id)
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !envName.MatchString(name) || name == execIDVar {
			return "", fmt.Errorf("environment variable name %q is not allowed", name)
		}
		b.WriteString(" " + shellQuote(name+"="+env[name]))
	}
	if watched {
		b.WriteString(" sh -c " + shellQuote(watchedScript) + " zke-exec " + shellQuote(cmd) + " " + shellQuote(killScript))
	} else {
		b.WriteString(" sh -c " + shellQuote(cmd))
	}
	return b.String(), nil
}

// killCommand is the command a kill session runs for the Exec with id.
func killCommand(id string) string {
	return "sh -c " + shellQuote(killScript) + " zke-kill " + id
}

// ShellJoin turns argv into one POSIX shell command line, each argument
// quoted as one word: what reaches the shell is exactly argv, whatever it
// holds.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
