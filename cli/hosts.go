package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
)

// hostKind prints registered hosts: reachability first, then the system.
func hostKind() kind {
	return kind{name: "host", columns: []column{
		col("NAME", "name"),
		col("ADDRESS", "address"),
		col("STATUS", "status"),
		col("OS", "system", "os"),
		col("CPUS", "system", "cpus"),
		{header: "MEMORY", cell: func(o object) string { return mebibytes(field(o, "system", "memoryBytes")) }},
		ageCol("AGE", time.Now, "createdAt"),
		wideCol("KERNEL", "system", "kernel"),
		wideCol("LABELS", "labels"),
		wideCol("REASON", "reason"),
		wideCol("HINT", "hint"),
	}}
}

// hostCommandKind prints the commands run on hosts. TRUNCATED says that
// a host's output was cut to the record's share: -o yaml on one command
// shows the outputs, each cut one with a line saying what was kept.
func hostCommandKind() kind {
	return kind{name: "hostcommand", columns: []column{
		col("ID", "id"),
		col("STATE", "state"),
		col("STARTED BY", "startedBy"),
		col("HOSTS", "hosts"),
		{header: "TRUNCATED", cell: func(o object) string { return strconv.FormatBool(field(o, "truncated") == "true") }},
		ageCol("AGE", time.Now, "startedAt"),
		wideCol("COMMAND", "command"),
		wideCol("SELECTOR", "selector"),
	}}
}

// mebibytes shows a byte count in MiB or GiB.
func mebibytes(s string) string {
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		return ""
	}
	if n >= 1<<30 {
		return fmt.Sprintf("%.1fGi", n/(1<<30))
	}
	return fmt.Sprintf("%.0fMi", n/(1<<20))
}

// environmentKind prints environments (clusters and groups of hosts).
func environmentKind() kind {
	return kind{name: "environment", columns: []column{
		col("NAME", "name"),
		col("KIND", "kind"),
		col("READY", "ready"),
		col("SELECTOR", "selector"),
		wideCol("CREATED BY", "createdBy"),
	}}
}

// listCmd is a list command of a resource under path.
func (a *app) listCmd(use, short string, k kind, path func(args []string) string, args ...string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(args...),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			objs, err := listObjects(cmd.Context(), c, path(args), nil)
			if err != nil {
				return err
			}
			return printList(a.Out, output, k, objs)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json, yaml or name")
	return cmd
}

// getCmd shows one resource at path.
func (a *app) getCmd(use, short string, k kind, defaultOutput string, path func(args []string) string, args ...string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactArgs(args...),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var obj object
			if err := c.do(cmd.Context(), http.MethodGet, path(args), nil, nil, &obj); err != nil {
				return err
			}
			return printOne(a.Out, output, k, obj)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", defaultOutput, "table, wide, json, yaml or name")
	return cmd
}

func (a *app) hostCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "host", Aliases: []string{"hosts"}, Short: "Show and check the registered hosts (admin)"}
	cmd.AddCommand(
		a.listCmd("list", "List the registered hosts, reachable or not", hostKind(), func([]string) string { return "/hosts" }),
		a.getCmd("get NAME", "Show one host (-o yaml: its system information)", hostKind(), "table",
			func(args []string) string { return "/hosts/" + url.PathEscape(args[0]) }, "NAME"),
		a.listCmd("commands", "List the commands run on hosts, newest first (exit codes in -o yaml; outputs with command ID)", hostCommandKind(),
			func([]string) string { return "/hosts/commands" }),
		a.getCmd("command ID", "Show one command run on hosts with each host's output (-o yaml, the default)", hostCommandKind(), "yaml",
			func(args []string) string { return "/hosts/commands/" + url.PathEscape(args[0]) }, "ID"),
		a.hostCheckCmd(),
	)
	return cmd
}

func (a *app) environmentCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "environment", Aliases: []string{"environments", "env"}, Short: "Show the environments applications go to (admin)"}
	cmd.AddCommand(a.listCmd("list", "List the environments: ready clusters and groups of hosts", environmentKind(), func([]string) string { return "/environments" }))
	return cmd
}
