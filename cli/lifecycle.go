package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

// operationKind prints a cluster's operations, newest first.
func operationKind() kind {
	return kind{name: "operation", columns: []column{
		col("TYPE", "kind"),
		col("STATE", "state"),
		{header: "PROGRESS", cell: func(o object) string {
			if t := field(o, "total"); t != "" && t != "0" {
				return field(o, "index") + "/" + t + " " + field(o, "percent") + "%"
			}
			return field(o, "percent") + "%"
		}},
		col("STARTED BY", "startedBy"),
		ageCol("STARTED", time.Now, "startedAt"),
		{header: "DURATION", cell: func(o object) string {
			start, err1 := time.Parse(time.RFC3339Nano, field(o, "startedAt"))
			end, err2 := time.Parse(time.RFC3339Nano, field(o, "endedAt"))
			if err1 != nil || err2 != nil {
				return ""
			}
			return end.Sub(start).Round(time.Second).String()
		}},
		wideCol("STEP", "step"),
		wideCol("ERROR", "error", "message"),
	}}
}

// certificateKind prints certificates, soonest to expire first.
func certificateKind() kind {
	return kind{name: "certificate", columns: []column{
		col("CLUSTER", "cluster"),
		col("ID", "id"),
		col("KIND", "kind"),
		col("NODE", "node"),
		col("CA", "ca"),
		col("NOT AFTER", "notAfter"),
		col("DAYS LEFT", "daysLeft"),
		wideCol("SUBJECT", "subject"),
		wideCol("SANS", "sans"),
	}}
}

// clusterLifecycleCmds are the cluster's other operations: history,
// certificates, rotation, restore, revert, host keys.
func (a *app) clusterLifecycleCmds() []*cobra.Command {
	clusterPath := func(args []string) string { return "/clusters/" + url.PathEscape(args[0]) }
	return []*cobra.Command{
		a.listCmd("operations NAME", "The cluster's operations: the running one, then the last 50, newest first", operationKind(),
			func(args []string) string { return clusterPath(args) + "/operations" }, "NAME"),
		a.listCmd("certificates NAME", "The cluster's certificates, soonest to expire first", certificateKind(),
			func(args []string) string { return clusterPath(args) + "/certificates" }, "NAME"),
		a.clusterPostCmd("rotate-certificates NAME [--ca]", "Reissue the cluster's certificates (--ca: the CAs too); an operation to follow with logs -f",
			"rotateCertificates", func(cmd *cobra.Command) any {
				if ca, _ := cmd.Flags().GetBool("ca"); ca {
					return map[string]bool{"ca": true}
				}
				return nil
			}, func(cmd *cobra.Command) { cmd.Flags().Bool("ca", false, "rotate the certificate authorities too") }),
		a.clusterPostCmd("restore NAME --snapshot ID", "Put the cluster's etcd back to a snapshot; an operation to follow with logs -f",
			"restore", func(cmd *cobra.Command) any {
				id, _ := cmd.Flags().GetString("snapshot")
				force, _ := cmd.Flags().GetBool("force")
				return map[string]any{"snapshot": id, "force": force}
			}, func(cmd *cobra.Command) {
				cmd.Flags().String("snapshot", "", "the snapshot's id ('singlecloud snapshot list NAME')")
				cmd.Flags().Bool("force", false, "restore a snapshot that failed its restore drill")
				_ = cmd.MarkFlagRequired("snapshot")
			}),
		a.clusterPostCmd("revert NAME", "Undo a failed or cancelled upgrade", "revert", nil, nil),
		a.clusterPostCmd("forget-host-key NAME --node NODE", "Forget a reinstalled node's pinned SSH host key, then retry",
			"forgetHostKey", func(cmd *cobra.Command) any {
				node, _ := cmd.Flags().GetString("node")
				return map[string]string{"node": node}
			}, func(cmd *cobra.Command) {
				cmd.Flags().String("node", "", "the node whose host key changed")
				_ = cmd.MarkFlagRequired("node")
			}),
	}
}

// clusterPostCmd is a POST ?action= with the body made by body (nil: none).
func (a *app) clusterPostCmd(use, short, action string, body func(*cobra.Command) any, flags func(*cobra.Command)) *cobra.Command {
	cmd := &cobra.Command{
		Use:               use,
		Short:             short,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var b any
			if body != nil {
				b = body(cmd)
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodPost, "/clusters/"+url.PathEscape(args[0]), url.Values{"action": {action}}, b, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "cluster/%s %s started (%s); follow it with: singlecloud cluster logs %s -f\n", args[0], action, printable(str(got["status"])), args[0])
			return nil
		},
	}
	if flags != nil {
		flags(cmd)
	}
	return cmd
}

// certificatesCmd is the fleet's certificate calendar.
func (a *app) certificatesCmd() *cobra.Command {
	var (
		output string
		within string
	)
	cmd := &cobra.Command{
		Use:   "certificates [--expiring-within 30d]",
		Short: "The certificates of every cluster, soonest to expire first",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var q url.Values
			if within != "" {
				q = url.Values{"expiringWithin": {within}}
			}
			objs, err := listObjects(cmd.Context(), c, "/certificates", q)
			if err != nil {
				return err
			}
			return printList(a.Out, output, certificateKind(), objs)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table, wide, json, yaml or name")
	cmd.Flags().StringVar(&within, "expiring-within", "", "only those expiring within this many days (30d) or this duration (720h)")
	return cmd
}
