package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// applicationKind prints application instances.
func applicationKind() kind {
	return kind{name: "application", columns: []column{
		col("NAME", "name"),
		col("ENVIRONMENT", "environment"),
		col("VERSION", "spec", "version"),
		col("PHASE", "phase"),
		ageCol("SINCE", time.Now, "phaseSince"),
		wideCol("MESSAGE", "message"),
		wideCol("UPDATED BY", "updatedBy"),
	}}
}

// appStatusKind prints an application's health in one row; -o yaml shows
// the levels per version and per node.
func appStatusKind() kind {
	return kind{name: "application", columns: []column{
		col("APP", "app"),
		col("PHASE", "phase"),
		col("LEVEL", "healthy", "level"),
		{header: "VERSIONS", cell: func(o object) string {
			vs, _ := o["versions"].([]any)
			var parts []string
			for _, v := range vs {
				m, _ := v.(map[string]any)
				parts = append(parts, fmt.Sprintf("%s %s/%s ready", field(m, "version"), field(m, "ready"), field(m, "desired")))
			}
			return strings.Join(parts, ", ")
		}},
		wideCol("MESSAGE", "message"),
	}}
}

func (a *app) appCmd() *cobra.Command {
	appPath := func(args []string) string {
		return "/environments/" + url.PathEscape(args[0]) + "/applications/" + url.PathEscape(args[1])
	}
	cmd := &cobra.Command{Use: "app", Aliases: []string{"apps", "application"}, Short: "Apply, show and uninstall applications (admin)"}
	cmd.AddCommand(
		a.listCmd("list ENV", "List the applications of an environment", applicationKind(),
			func(args []string) string { return "/environments/" + url.PathEscape(args[0]) + "/applications" }, "ENV"),
		a.getCmd("get ENV APP", "Show one application", applicationKind(), "table", appPath, "ENV", "APP"),
		a.getCmd("status ENV APP", "Show an application's health levels (overall, per version, per node; -o yaml for all)", appStatusKind(), "table",
			func(args []string) string { return appPath(args) + "/status" }, "ENV", "APP"),
		a.appApplyCmd(appPath),
		a.appDeleteCmd(appPath),
	)
	return cmd
}

func (a *app) appApplyCmd(appPath func([]string) string) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply ENV APP -f FILE",
		Short: "Apply an application's spec (YAML or JSON; a 'get -o yaml' applies as is)",
		Args:  exactArgs("ENV", "APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return usageErrorf("app apply needs -f FILE")
			}
			obj, err := readObjectFile(file, a.In)
			if err != nil {
				return err
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodPut, appPath(args), nil, obj, &got); err != nil {
				return err
			}
			fmt.Fprintf(a.Out, "application/%s applied in %s (%s)\n", args[1], args[0], printable(str(got["phase"])))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the application's spec, YAML or JSON (- for stdin)")
	return cmd
}

func (a *app) appDeleteCmd(appPath func([]string) string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ENV APP",
		Short: "Uninstall an application (again once Uninstalled: forget it)",
		Args:  exactArgs("ENV", "APP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := a.session()
			if err != nil {
				return err
			}
			var got object
			if err := c.do(cmd.Context(), http.MethodDelete, appPath(args), nil, nil, &got); err != nil {
				return err
			}
			if phase := str(got["phase"]); phase != "" {
				fmt.Fprintf(a.Out, "application/%s in %s: %s\n", args[1], args[0], printable(phase))
				return nil
			}
			fmt.Fprintf(a.Out, "application/%s in %s deleted\n", args[1], args[0])
			return nil
		},
	}
}
