package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/spf13/cobra"
)

// clusterUpgradeCmd is `cluster upgrade NAME --to VERSION`: the cluster's
// config as the server has it, with the new version, sent back whole (PUT,
// as apply does), so nothing else changes. The server upgrades node by
// node; a failed or cancelled upgrade is carried on by retry or undone by
// revert.
func (a *app) clusterUpgradeCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "upgrade NAME --to VERSION",
		Short: "Upgrade the cluster's Kubernetes, node by node; an operation to follow with logs -f (undo a failed one with revert)",
		Long: `Upgrade a created cluster to another Kubernetes release (e.g. v1.36.3),
one node at a time: control plane nodes first, each drained and checked
healthy before the next. Only the version changes: the rest of the
cluster's config is sent back as the server has it. A failed or cancelled
upgrade is carried on with 'singlecloud cluster retry NAME' or undone with
'singlecloud cluster revert NAME'.`,
		Args:              exactArgs("NAME"),
		ValidArgsFunction: a.clusterNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			path := "/clusters/" + url.PathEscape(args[0])
			var cur object
			if err := c.do(cmd.Context(), http.MethodGet, path, nil, nil, &cur); err != nil {
				return err
			}
			if cur["imported"] == true {
				return fmt.Errorf("cluster %s is imported: singlecloud did not install it and cannot upgrade it", args[0])
			}
			// kubernetesVersion is what the cluster is to run: after an
			// upgrade that did not finish (the server offers revert) it
			// is not what runs.
			unfinished := slices.Contains(asStrings(cur["actions"]), "revert")
			switch {
			case cur["kubernetesVersion"] == to && unfinished:
				return fmt.Errorf("an upgrade of cluster %s to %s did not finish: carry it on with 'singlecloud cluster retry %s' "+
					"or undo it with 'singlecloud cluster revert %s'", args[0], to, args[0], args[0])
			case cur["kubernetesVersion"] == to:
				fmt.Fprintf(a.Out, "cluster/%s already runs %s\n", args[0], to)
				return nil
			}
			body := withoutReadOnly(cur)
			body["kubernetesVersion"] = to
			var got object
			if err := c.do(cmd.Context(), http.MethodPut, path, nil, body, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "cluster/%s upgrade to %s started (%s); follow it with: singlecloud cluster logs %s -f\n",
				args[0], to, printable(str(got["status"])), args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the Kubernetes release to upgrade to, e.g. v1.36.3")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// asStrings is a JSON array of strings as decoded into an object.
func asStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		out = append(out, str(x))
	}
	return out
}
