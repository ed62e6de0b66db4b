package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"
)

// hostCheckResult is the answer of POST /hosts/{host}?action=check.
type hostCheckResult struct {
	Host     string   `json:"host"`
	Roles    []string `json:"roles"`
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
	Warnings []string `json:"warnings"`
	Log      []string `json:"log"`
	Seconds  float64  `json:"seconds"`
}

// hostCheckCmd is `host check NAME`: a create's checks against a
// registered host, without creating anything. It exits 1 when the host
// fails a check, so that a script can gate on it.
func (a *app) hostCheckCmd() *cobra.Command {
	var roles []string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "check NAME",
		Short: "Check a registered host as a create would, changing nothing on it (admin); exit 1 if it fails a check",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var body any
			if len(roles) > 0 {
				body = map[string][]string{"roles": roles}
			}
			var res hostCheckResult
			if err := c.do(cmd.Context(), http.MethodPost, "/hosts/"+url.PathEscape(args[0]), url.Values{"action": {"check"}}, body, &res); err != nil {
				return err
			}
			printHostCheck(a, res, verbose)
			if !res.OK {
				return &exitError{code: ExitError, msg: fmt.Sprintf("host %s failed %d check(s)", printable(res.Host), len(res.Problems))}
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&roles, "roles", nil, "the roles to check the host for: etcd, controlplane, worker (default: all)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every line the checks reported")
	return cmd
}

func printHostCheck(a *app, res hostCheckResult, verbose bool) {
	verdict := "passed"
	if !res.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(a.Out, "host %s (%s): %s in %.1fs\n", printable(res.Host), printable(strings.Join(res.Roles, ",")), verdict, res.Seconds)
	for _, p := range res.Problems {
		fmt.Fprintf(a.Out, "  problem: %s\n", printable(p))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.Out, "  warning: %s\n", printable(w))
	}
	if verbose {
		for _, l := range res.Log {
			fmt.Fprintf(a.Out, "  %s\n", printable(l))
		}
	}
}
