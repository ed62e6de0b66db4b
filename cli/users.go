package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// userKind prints users and their grants.
func userKind() kind {
	return kind{name: "user", columns: []column{
		col("NAME", "name"),
		{header: "GRANTS", cell: grantsText},
		ageCol("AGE", time.Now, "creationTimestamp"),
	}}
}

// grantsText is a user's projects as cluster/namespace (* for every
// namespace); the admin may do everything.
func grantsText(u object) string {
	if str(u["name"]) == "admin" {
		return "everything (admin)"
	}
	ps, _ := u["projects"].([]any)
	var out []string
	for _, p := range ps {
		m, _ := p.(map[string]any)
		ns := str(m["namespace"])
		if ns == "" || ns == "_all_namespaces" || ns == "_all" {
			ns = "*"
		}
		out = append(out, str(m["cluster"])+"/"+ns)
	}
	if len(out) == 0 {
		return "none"
	}
	return printable(strings.Join(out, ", "))
}

func (a *app) userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Aliases: []string{"users"}, Short: "Manage users, their passwords and grants"}
	cmd.AddCommand(a.userListCmd(), a.userCreateCmd(), a.userDeleteCmd(), a.userGrantCmd(), a.userPasswdCmd())
	return cmd
}

func (a *app) userListCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List users (the admin sees all, others themselves)",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			objs, err := listObjects(cmd.Context(), c, "/users", nil)
			if err != nil {
				return err
			}
			return printList(a.Out, output, userKind(), objs)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json, yaml or name")
	return cmd
}

// parseGrant reads CLUSTER/NAMESPACE (NAMESPACE * or absent: every one).
func parseGrant(s string) (map[string]string, error) {
	cluster, ns, _ := strings.Cut(s, "/")
	if cluster == "" {
		return nil, usageErrorf("--grant %q is not CLUSTER/NAMESPACE", s)
	}
	if ns == "" || ns == "*" {
		ns = "_all_namespaces"
	}
	return map[string]string{"cluster": cluster, "namespace": ns}, nil
}

func (a *app) userCreateCmd() *cobra.Command {
	var (
		passwordFile string
		grants       []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a user (password from --password-file, $SINGLECLOUD_NEW_PASSWORD or asked twice)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			projects := []map[string]string{}
			for _, g := range grants {
				p, err := parseGrant(g)
				if err != nil {
					return err
				}
				projects = append(projects, p)
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			pw, err := a.newPassword(passwordFile, args[0])
			if err != nil {
				return err
			}
			body := map[string]any{"name": args[0], "password": digest(pw), "projects": projects}
			if err := c.do(cmd.Context(), http.MethodPost, "/users", nil, body, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "user/%s created\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the new user's password from this file")
	cmd.Flags().StringArrayVar(&grants, "grant", nil, "grant CLUSTER/NAMESPACE (or CLUSTER/* for every namespace); repeatable")
	return cmd
}

// newPassword reads a new password: --password-file, else
// $SINGLECLOUD_NEW_PASSWORD, else asked twice on the terminal.
func (a *app) newPassword(file, user string) (string, error) {
	if file == "" {
		if p := a.Getenv("SINGLECLOUD_NEW_PASSWORD"); p != "" {
			return p, nil
		}
		p1, err := a.promptPassword(fmt.Sprintf("New password for %s: ", user))
		if err != nil {
			return "", err
		}
		p2, err := a.promptPassword("Again: ")
		if err != nil {
			return "", err
		}
		if p1 != p2 {
			return "", fmt.Errorf("the passwords differ")
		}
		if p1 == "" {
			return "", fmt.Errorf("the password is empty")
		}
		return p1, nil
	}
	return a.readPassword(file, "")
}

func (a *app) userDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user (its tokens stop working)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			if err := c.do(cmd.Context(), http.MethodDelete, "/users/"+url.PathEscape(args[0]), nil, nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "user/%s deleted\n", args[0])
			return nil
		},
	}
}

func (a *app) userGrantCmd() *cobra.Command {
	var cluster, namespace string
	var revoke bool
	cmd := &cobra.Command{
		Use:   "grant NAME --cluster C [--namespace N]",
		Short: "Grant a user a cluster's namespace (every namespace without --namespace); --revoke takes it back",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cluster == "" {
				return usageErrorf("grant needs --cluster")
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			path := "/users/" + url.PathEscape(args[0])
			var u object
			if err := c.do(cmd.Context(), http.MethodGet, path, nil, nil, &u); err != nil {
				return err
			}
			want, _ := parseGrant(cluster + "/" + namespace)
			projects := []map[string]string{}
			have := false
			ps, _ := u["projects"].([]any)
			for _, p := range ps {
				m, _ := p.(map[string]any)
				same := str(m["cluster"]) == want["cluster"] && str(m["namespace"]) == want["namespace"]
				have = have || same
				if revoke && same {
					continue
				}
				projects = append(projects, map[string]string{"cluster": str(m["cluster"]), "namespace": str(m["namespace"])})
			}
			if !revoke && !have {
				projects = append(projects, want)
			}
			if err := c.do(cmd.Context(), http.MethodPut, path, nil, map[string]any{"projects": projects}, &u); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "user/%s grants: %s\n", args[0], grantsText(u))
			return nil
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "the cluster")
	cmd.Flags().StringVar(&namespace, "namespace", "", "the namespace (default: every namespace)")
	cmd.Flags().BoolVar(&revoke, "revoke", false, "take the grant back instead")
	return cmd
}

func (a *app) userPasswdCmd() *cobra.Command {
	var passwordFile, oldPasswordFile string
	cmd := &cobra.Command{
		Use:   "passwd [NAME]",
		Short: "Change your password (the old one is asked), or as the admin set another user's",
		Long: `Change a password. Your own needs the old one (--old-password-file,
$SINGLECLOUD_PASSWORD, or asked); the admin sets anyone else's without it.
Every token of the user issued before stops working; after changing your own,
this context logs in again with the new password.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("passwd takes at most one user name")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, err := a.session()
			if err != nil {
				return err
			}
			target := ctx.User
			if len(args) == 1 {
				target = args[0]
			}
			body := map[string]string{}
			self := target == ctx.User
			if self {
				old, err := a.readPassword(oldPasswordFile, fmt.Sprintf("Current password for %s: ", target))
				if err != nil {
					return err
				}
				body["oldPassword"] = digest(old)
			}
			pw, err := a.newPassword(passwordFile, target)
			if err != nil {
				return err
			}
			body["newPassword"] = digest(pw)
			if err := c.do(cmd.Context(), http.MethodPost, "/users/"+url.PathEscape(target), url.Values{"action": {"resetPassword"}}, body, nil); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "user/%s password changed\n", target)
			if !self {
				return nil
			}
			return a.relogin(cmd, ctx, pw)
		},
	}
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the new password from this file")
	cmd.Flags().StringVar(&oldPasswordFile, "old-password-file", "", "read your current password from this file")
	return cmd
}

// relogin logs the context in again after its user's password changed
// (which revoked its token).
func (a *app) relogin(cmd *cobra.Command, ctx Context, password string) error {
	c, err := newClient(ctx.Server, "", tlsOptions{insecure: ctx.InsecureSkipTLSVerify, caFile: ctx.CertificateAuthority})
	if err != nil {
		return err
	}
	var answer struct {
		Token string `json:"token"`
	}
	if err := c.do(cmd.Context(), http.MethodPost, "/users/"+url.PathEscape(ctx.User), url.Values{"action": {"login"}},
		map[string]string{"password": digest(password)}, &answer); err != nil {
		return fmt.Errorf("log in again with the new password: %w", err)
	}
	cfg, path, err := a.loadConfig()
	if err != nil {
		return err
	}
	saved := cfg.context(ctx.Name)
	if saved == nil {
		fmt.Fprintln(a.Err, "no saved context to keep the new token in: run 'singlecloud login'")
		return nil
	}
	saved.Token = answer.Token
	return cfg.save(path)
}
