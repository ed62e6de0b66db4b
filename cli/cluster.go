package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// clusterKind prints clusters: the list a person scans (status, version,
// nodes, what the last operation is doing) and, wide, why.
func clusterKind() kind {
	return kind{name: "cluster", columns: []column{
		col("NAME", "name"),
		col("STATUS", "status"),
		col("VERSION", "version"),
		col("NODES", "nodeCount"),
		{header: "OPERATION", cell: operationText},
		ageCol("AGE", time.Now, "creationTimestamp"),
		{header: "KIND", wide: true, cell: func(o object) string {
			if o["imported"] == true {
				return "imported"
			}
			return "created"
		}},
		{header: "ACTIONS", wide: true, cell: func(o object) string {
			return strings.Join(asStrings(o["actions"]), ",")
		}},
		wideCol("REASON", "reason"),
	}}
}

// operationText is "create running 3/9 40%", "update failed" or "".
func operationText(o object) string {
	op, ok := o["lastOperation"].(map[string]any)
	if !ok {
		return ""
	}
	s := field(op, "type") + " " + field(op, "state")
	if field(op, "state") == "running" {
		if t := field(op, "total"); t != "" && t != "0" {
			s += " " + field(op, "index") + "/" + t
		}
		s += " " + field(op, "percent") + "%"
	}
	return s
}

// clusterCmd is `cluster`, the clusters' subcommands.
func (a *app) clusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Aliases: []string{"clusters"}, Short: "List, create, change, follow and delete clusters"}
	cmd.AddCommand(a.clusterListCmd(), a.clusterGetCmd(), a.clusterCreateCmd(), a.clusterApplyCmd(),
		a.clusterDeleteCmd(), a.clusterActionCmd("cancel", "Cancel the cluster's running operation"),
		a.clusterActionCmd("retry", "Retry (resume) the cluster's failed or cancelled operation"),
		a.clusterImportCmd(), a.clusterKubeconfigCmd(), a.clusterLogsCmd(), a.clusterWaitCmd(), a.clusterUpgradeCmd())
	cmd.AddCommand(a.clusterLifecycleCmds()...)
	return cmd
}

// clusterNames completes cluster names from the server.
func (a *app) clusterNames(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, _, err := a.session()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	objs, err := listObjects(cmd.Context(), c, "/clusters", nil)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, o := range objs {
		names = append(names, str(o["name"]))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// listObjects GETs a collection and returns its data.
func listObjects(ctx context.Context, c *client, path string, q url.Values) ([]object, error) {
	var coll struct {
		Data []object `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, path, q, nil, &coll); err != nil {
		return nil, err
	}
	return coll.Data, nil
}

func (a *app) clusterListCmd() *cobra.Command {
	var (
		output    string
		watch     bool
		onlyReady bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the clusters you may see",
		Long: `List the clusters you may see. --watch then prints each cluster again as it
changes (a deleted one as Deleted), when the events websocket reports it (no
polling); the whole list again only after the events stream was resumed.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			w := &clusterWatch{a: a, c: c, output: output, onlyReady: onlyReady}
			if !watch {
				return w.list(cmd.Context())
			}
			return a.watchList(cmd.Context(), c, func() error { return w.list(cmd.Context()) },
				func(names []string) error { return w.changed(cmd.Context(), names) })
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json, yaml or name")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "then print each cluster again as it changes")
	cmd.Flags().BoolVar(&onlyReady, "only-ready", false, "only the clusters that are ready (Running, Unreachable, Updating)")
	return cmd
}

func (a *app) clusterGetCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:               "get NAME",
		Short:             "Show one cluster; -o yaml gives a file 'cluster apply -f' takes",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var obj object
			if err := c.do(cmd.Context(), http.MethodGet, "/clusters/"+url.PathEscape(args[0]), nil, nil, &obj); err != nil {
				return err
			}
			return printOne(a.Out, output, clusterKind(), obj)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json, yaml or name")
	return cmd
}

// clusterFileCmd is create or apply: a cluster config from -f, sent by
// method to the path made from its name.
func (a *app) clusterFileCmd(use, short, long string, send func(ctx context.Context, c *client, name string, body object) (object, error), verb string) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if file == "" {
				return usageErrorf("%s needs -f FILE (YAML or JSON; - reads stdin)", cmd.CommandPath())
			}
			obj, err := readObjectFile(file, a.In)
			if err != nil {
				return err
			}
			name := str(obj["name"])
			if name == "" {
				return fmt.Errorf("%s: name: the cluster's name is missing", file)
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			got, err := send(cmd.Context(), c, name, withoutReadOnly(obj))
			if err != nil {
				return err
			}
			if output != "" {
				return printOne(a.Out, output, clusterKind(), got)
			}
			fmt.Fprintf(a.Out, "cluster/%s %s (%s); follow it with: singlecloud cluster logs %s -f\n", name, verb, printable(str(got["status"])), name)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the cluster's config, YAML or JSON (- for stdin)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the cluster as table, wide, json, yaml or name")
	return cmd
}

func (a *app) clusterCreateCmd() *cobra.Command {
	return a.clusterFileCmd("create -f FILE", "Create a cluster on hosts from a config file",
		`Create a cluster from a config file (YAML or JSON, the API's fields: name,
nodes, sshUser, sshKey, network, ...). The read-only fields of a 'get -o yaml'
(status, lastOperation, ...) are left out. The install runs in the
background: follow it with 'singlecloud cluster logs NAME -f'.`,
		func(ctx context.Context, c *client, _ string, body object) (object, error) {
			var got object
			err := c.do(ctx, http.MethodPost, "/clusters", nil, body, &got)
			return got, err
		}, "created")
}

func (a *app) clusterApplyCmd() *cobra.Command {
	return a.clusterFileCmd("apply -f FILE", "Change a cluster to the config of a file (add or remove nodes, upgrade)",
		`PUT the whole config of a file to the cluster it names: the output of
'singlecloud cluster get NAME -o yaml', edited, applies as is (its read-only
fields are left out; sshKey may be left out to keep the cluster's).`,
		func(ctx context.Context, c *client, name string, body object) (object, error) {
			var got object
			err := c.do(ctx, http.MethodPut, "/clusters/"+url.PathEscape(name), nil, body, &got)
			return got, err
		}, "configured")
}

func (a *app) clusterDeleteCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a cluster (a created one's hosts are cleaned; --force skips unreachable ones)",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var q url.Values
			if force {
				q = url.Values{"force": {"true"}}
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodDelete, "/clusters/"+url.PathEscape(args[0]), q, nil, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "cluster/%s deleting (%s)\n", args[0], printable(str(got["status"])))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "skip hosts that cannot be reached")
	return cmd
}

// clusterActionCmd is a POST ?action= without a body (cancel, retry).
func (a *app) clusterActionCmd(action, short string) *cobra.Command {
	return &cobra.Command{
		Use:               action + " NAME",
		Short:             short,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodPost, "/clusters/"+url.PathEscape(args[0]), url.Values{"action": {action}}, nil, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "cluster/%s %s: %s\n", args[0], pastTense(action), printable(str(got["status"])))
			return nil
		},
	}
}

func pastTense(action string) string {
	switch action {
	case "cancel":
		return "cancelled"
	case "retry":
		return "retried"
	}
	return action + "ed"
}

func (a *app) clusterImportCmd() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:   "import NAME --kubeconfig FILE",
		Short: "Import an existing cluster by its kubeconfig (inline credentials only)",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if kubeconfig == "" {
				return usageErrorf("import needs --kubeconfig FILE")
			}
			kc, err := os.ReadFile(kubeconfig)
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodPost, "/clusters", url.Values{"action": {"import"}},
				map[string]string{"name": args[0], "kubeconfig": string(kc)}, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "cluster/%s imported (%s)\n", args[0], printable(str(got["status"])))
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (kubectl config view --raw --minify --flatten gives one)")
	return cmd
}

func (a *app) clusterKubeconfigCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:               "kubeconfig NAME [-f OUT]",
		Short:             "Download the cluster's admin kubeconfig to OUT (0600) or stdout",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			kc, err := c.raw(cmd.Context(), http.MethodGet, "/clusters/"+url.PathEscape(args[0])+"/kubeconfigs/kube-admin", url.Values{"download": {"1"}}, nil)
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				_, err := a.Out.Write(kc)
				return err
			}
			if err := writeFileAtomic(out, kc, configFileMode); err != nil {
				return err
			}
			fmt.Fprintf(a.Err, "Wrote the kubeconfig of %s to %s (mode 0600).\n", args[0], out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "filename", "f", "", "write it to this file, mode 0600 (default: stdout)")
	return cmd
}

// statusOf returns a cluster's status, "" when it does not exist.
func statusOf(ctx context.Context, c *client, name string) (object, error) {
	var obj object
	err := c.do(ctx, http.MethodGet, "/clusters/"+url.PathEscape(name), nil, nil, &obj)
	return obj, err
}

// parseFor reads --for=status=S (or --for=delete).
func parseFor(s string) (status string, deleted bool, err error) {
	if s == "delete" {
		return "", true, nil
	}
	v, ok := strings.CutPrefix(s, "status=")
	if !ok || v == "" {
		return "", false, usageErrorf("--for %q is not status=STATUS (e.g. status=Running) or delete", s)
	}
	return v, false, nil
}
