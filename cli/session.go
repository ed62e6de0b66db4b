package cli

import (
	"bufio"
	"crypto/sha1" //nolint:gosec // the API's password digest is SHA-1, as singlecloud's clients always sent
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"golang.org/x/term"
)

// configPath is --config, $SINGLECLOUD_CONFIG or the default.
func (a *app) configPath() (string, error) {
	if a.g.configPath != "" {
		return a.g.configPath, nil
	}
	return defaultConfigPath(a.Getenv)
}

// loadConfig reads the CLI's config and returns it with its path.
func (a *app) loadConfig() (*Config, string, error) {
	path, err := a.configPath()
	if err != nil {
		return nil, "", err
	}
	c, err := loadConfig(path)
	return c, path, err
}

// currentContext is the context --context names, else the current one;
// the TLS flags override its settings. --server may only name the
// context's own server (its token is for it alone): another server is an
// error saying to log in to it, or to pick its context.
func (a *app) currentContext(cfg *Config) (Context, error) {
	name := a.g.context
	if name == "" {
		name = cfg.CurrentContext
	}
	var ctx Context
	if name != "" {
		c := cfg.context(name)
		if c == nil {
			return Context{}, fmt.Errorf("context %q does not exist: 'singlecloud config get-contexts' lists them", name)
		}
		ctx = *c
	}
	if a.g.server != "" && !sameServer(a.g.server, ctx.Server) {
		// The context's token is its server's: never sent to another.
		had, theirs := ctx.Token != "", ctx.Server
		ctx.Server, ctx.Token = a.g.server, ""
		if !had {
			return ctx, fmt.Errorf("not logged in to %s: run 'singlecloud login --server %s --user NAME'", a.g.server, a.g.server)
		}
		return ctx, fmt.Errorf("not logged in to %s: the context's token is for %s; run 'singlecloud login --server %s --user NAME' (or pick that server's context with --context)",
			a.g.server, theirs, a.g.server)
	}
	if a.g.insecure {
		ctx.InsecureSkipTLSVerify = true
	}
	if a.g.caFile != "" {
		ctx.CertificateAuthority = a.g.caFile
	}
	return ctx, nil
}

// sameServer reports whether the server URLs a and b name the same server:
// the scheme and host compared case-insensitively, a default port (80,
// 443) the same as none, a trailing slash ignored. An unparsable URL is
// only the same as itself.
func sameServer(a, b string) bool {
	return normalizeServer(a) == normalizeServer(b)
}

func normalizeServer(s string) string {
	s = strings.TrimSpace(s)
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || u.Host == "" {
		return s
	}
	return origin(u) + strings.TrimRight(u.EscapedPath(), "/")
}

// session is the client of the context in use, logged in.
func (a *app) session() (*client, Context, error) {
	cfg, _, err := a.loadConfig()
	if err != nil {
		return nil, Context{}, err
	}
	ctx, err := a.currentContext(cfg)
	if err != nil {
		return nil, Context{}, err
	}
	if ctx.Server == "" || ctx.Token == "" {
		return nil, ctx, errors.New("not logged in: run 'singlecloud login --server URL --user NAME'")
	}
	c, err := newClient(ctx.Server, ctx.Token, tlsOptions{insecure: ctx.InsecureSkipTLSVerify, caFile: ctx.CertificateAuthority})
	return c, ctx, err
}

// digest is the password as the API takes it: its SHA-1, in hex.
func digest(password string) string {
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the API's digest
	return hex.EncodeToString(sum[:])
}

// readPassword finds the password: --password-file, else
// $SINGLECLOUD_PASSWORD, else a prompt without echo on a terminal. The
// file's and the variable's trailing line break is not part of it.
func (a *app) readPassword(file, prompt string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("password-file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	if p := a.Getenv("SINGLECLOUD_PASSWORD"); p != "" {
		return p, nil
	}
	return a.promptPassword(prompt)
}

// promptPassword asks for a password on the terminal, without echo.
func (a *app) promptPassword(prompt string) (string, error) {
	f, ok := a.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", usageErrorf("no password: give --password-file FILE or set SINGLECLOUD_PASSWORD, or run from a terminal to be asked")
	}
	fmt.Fprint(a.Err, prompt)
	b, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(a.Err)
	if err != nil {
		return "", fmt.Errorf("read the password: %w", err)
	}
	return string(b), nil
}

// readLine reads one line from r (for confirmations).
func readLine(r *bufio.Reader) string {
	s, _ := r.ReadString('\n')
	return strings.TrimSpace(s)
}
