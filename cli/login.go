package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// loginCmd exchanges a password for a token and keeps it in a context.
func (a *app) loginCmd() *cobra.Command {
	var user, passwordFile string
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in to a server and keep the token in a context",
		Long: `Log in to a server as a user and keep the token (valid 24 hours) in the
config file (0600), in the context --context names, else user@host. The
password is read from --password-file, else $SINGLECLOUD_PASSWORD, else asked
for without echo on the terminal. The new context becomes the current one.`,
		Example: `  singlecloud login --server https://sc.example:8443 --user admin
  singlecloud login --server http://localhost:8080 --user ann --context lab --password-file pw.txt`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			ctx := a.loginContext(cfg, user)
			if ctx.Server == "" {
				return usageErrorf("login needs --server URL (no context to take it from)")
			}
			if ctx.User == "" {
				return usageErrorf("login needs --user NAME")
			}
			c, err := newClient(ctx.Server, "", tlsOptions{insecure: ctx.InsecureSkipTLSVerify, caFile: ctx.CertificateAuthority})
			if err != nil {
				return err
			}
			password, err := a.readPassword(passwordFile, fmt.Sprintf("Password for %s at %s: ", ctx.User, c.base.Host))
			if err != nil {
				return err
			}
			var answer struct {
				Token string `json:"token"`
			}
			if err := c.do(cmd.Context(), http.MethodPost, "/users/"+url.PathEscape(ctx.User), url.Values{"action": {"login"}},
				map[string]string{"password": digest(password)}, &answer); err != nil {
				var ae *APIError
				if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
					return &exitError{code: ExitError, msg: fmt.Sprintf("login as %s at %s failed: the user or the password is wrong", ctx.User, c.base.Host)}
				}
				return err
			}
			if answer.Token == "" {
				return fmt.Errorf("the server answered the login without a token")
			}
			ctx.Token = answer.Token
			ctx.Server = c.base.String()
			cfg.upsert(ctx)
			cfg.CurrentContext = ctx.Name
			if err := cfg.save(path); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Logged in to %s as %s (context %s).\n", ctx.Server, ctx.User, ctx.Name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&user, "user", "u", "", "the user to log in as (default: the context's)")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the password from this file (its first line)")
	return cmd
}

// loginContext is the context a login fills: the one --context names
// (new or not), else user@host of --server and --user when either is
// given (the current context's fill in the other), else the current one.
// The flags override what the context had.
func (a *app) loginContext(cfg *Config, user string) Context {
	name := a.g.context
	cur := cfg.context(cfg.CurrentContext)
	if name == "" && cur != nil && a.g.server == "" && user == "" {
		name = cur.Name
	}
	if name == "" {
		server, u := a.g.server, user
		if cur != nil && server == "" {
			server = cur.Server
		}
		if cur != nil && u == "" {
			u = cur.User
		}
		name = contextName(strings.TrimRight(server, "/"), u)
	}
	var ctx Context
	if c := cfg.context(name); c != nil {
		ctx = *c
	} else if cur != nil && a.g.server == "" {
		ctx.Server, ctx.InsecureSkipTLSVerify, ctx.CertificateAuthority = cur.Server, cur.InsecureSkipTLSVerify, cur.CertificateAuthority
	}
	ctx.Name = name
	if a.g.server != "" {
		ctx.Server = a.g.server
	}
	if user != "" {
		ctx.User = user
	}
	if a.g.insecure {
		ctx.InsecureSkipTLSVerify = true
	}
	if a.g.caFile != "" {
		ctx.CertificateAuthority = a.g.caFile
	}
	return ctx
}

// logoutCmd forgets the context's token (the server's tokens expire on
// their own; a password change revokes them all).
func (a *app) logoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the token of the current (or --context) context",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			name := a.g.context
			if name == "" {
				name = cfg.CurrentContext
			}
			ctx := cfg.context(name)
			if ctx == nil {
				return fmt.Errorf("no context to log out of")
			}
			ctx.Token = ""
			if err := cfg.save(path); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Logged out of %s (context %s).\n", ctx.Server, ctx.Name)
			return nil
		},
	}
}

// whoamiCmd shows the user the token is for, as the server sees it.
func (a *app) whoamiCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show the user you are logged in as, its grants and the token's expiry",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, ctx, err := a.session()
			if err != nil {
				return err
			}
			var u object
			if err := c.do(cmd.Context(), http.MethodGet, "/users/"+url.PathEscape(ctx.User), nil, nil, &u); err != nil {
				return err
			}
			if output == outJSON || output == outYAML {
				return printOne(a.Out, output, userKind(), u)
			}
			tw := tabwriter.NewWriter(a.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintf(tw, "User:\t%s\n", printable(str(u["name"])))
			fmt.Fprintf(tw, "Server:\t%s\n", ctx.Server)
			fmt.Fprintf(tw, "Context:\t%s\n", ctx.Name)
			fmt.Fprintf(tw, "Grants:\t%s\n", grantsText(u))
			if exp, ok := tokenExpiry(ctx.Token); ok {
				fmt.Fprintf(tw, "Token expires:\t%s (in %s)\n", exp.Local().Format(time.RFC3339), humanDuration(time.Until(exp)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "json or yaml for the user resource")
	return cmd
}

// tokenExpiry reads the exp claim of a JWT without checking it (the
// server does); it is only shown.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp == 0 {
		return time.Time{}, false
	}
	return time.Unix(claims.Exp, 0), true
}

// configCmd manages the contexts of the config file.
func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Show and choose the contexts of the config file"}
	cmd.AddCommand(&cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts; * marks the current one",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.Out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(tw, "CURRENT\tNAME\tSERVER\tUSER\tLOGGED IN")
			for _, c := range cfg.Contexts {
				cur := ""
				if c.Name == cfg.CurrentContext {
					cur = "*"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cur, c.Name, c.Server, c.User, yesNo(c.Token != ""))
			}
			return tw.Flush()
		},
	}, &cobra.Command{
		Use:   "use-context NAME",
		Short: "Make NAME the current context",
		Args:  exactArgs("NAME"),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, c := range cfg.Contexts {
				names = append(names, c.Name)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.context(args[0]) == nil {
				return fmt.Errorf("context %q does not exist: 'singlecloud config get-contexts' lists them", args[0])
			}
			cfg.CurrentContext = args[0]
			if err := cfg.save(path); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Switched to context %q.\n", args[0])
			return nil
		},
	}, &cobra.Command{
		Use:   "current-context",
		Short: "Print the current context's name",
		Args:  exactArgs(),
		RunE: func(*cobra.Command, []string) error {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return fmt.Errorf("no current context: run 'singlecloud login'")
			}
			fmt.Fprintln(a.Out, cfg.CurrentContext)
			return nil
		},
	}, &cobra.Command{
		Use:   "delete-context NAME",
		Short: "Delete the context NAME (and its token)",
		Args:  exactArgs("NAME"),
		RunE: func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			kept := cfg.Contexts[:0]
			for _, c := range cfg.Contexts {
				if c.Name != args[0] {
					kept = append(kept, c)
				}
			}
			if len(kept) == len(cfg.Contexts) {
				return fmt.Errorf("context %q does not exist", args[0])
			}
			cfg.Contexts = kept
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
			}
			if err := cfg.save(path); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "Deleted context %q.\n", args[0])
			return nil
		},
	})
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
