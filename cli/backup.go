package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zdnscloud/singlecloud/backup"
	"github.com/zdnscloud/singlecloud/internal/durable"
)

// backupCmd downloads the online backup of the server's database (GET
// /backup, admin), checked as it arrives against the format's own SHA-256
// trailer: a file is renamed into place only when whole.
func (a *app) backupCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "backup --context NAME | --server URL [-o FILE]",
		Short: "Download a consistent backup of the running server's database (admin)",
		Long: `backup downloads a consistent backup of the database of the server the context
(--context, --server) names, taken while it runs: admin only. To stdout unless -o
FILE (mode 0600, written whole or not at all); never to a terminal. The backup
holds the secrets sealed; the key file that opens them is not in it: back that
file up separately. Without --context or --server, 'singlecloud backup --db FILE'
(or --store etcd ...) backs a database up directly; 'singlecloud backup --help'
describes it; 'singlecloud restore' and 'singlecloud migrate' use the backups.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" && isTerminal(a.Out) {
				return usageErrorf("stdout is a terminal: give -o FILE or redirect stdout to a file")
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			resp, err := c.stream(cmd.Context(), "/backup", nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var (
				hdr      backup.Header
				st       backup.Stats
				checkErr error
			)
			check := func(w io.Writer) error {
				hdr, st, checkErr = backup.Check(io.TeeReader(resp.Body, w))
				return checkErr
			}
			if out == "" {
				err = check(a.Out)
				out = "stdout"
			} else {
				err = durable.WriteFile(out, 0o600, check)
			}
			switch {
			case err != nil && err == checkErr:
				return fmt.Errorf("download backup: %w: the copy is incomplete or damaged, run the backup again", err)
			case err != nil:
				return fmt.Errorf("download backup: write %s: %w", out, err)
			}
			fmt.Fprintf(a.Err, "backup of %s %s written to %s: %s, %d bytes.\n", printable(string(hdr.Source)), printable(hdr.Origin), out, st, st.Bytes)
			fmt.Fprintf(a.Err, "The backup holds the secrets sealed; the key file that opens them is NOT in it: back up %s "+
				"(on host %s) separately, or the restored secrets cannot be opened.\n", hdr.KeyFile, hdr.Host)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (mode 0600); default: stdout")
	return cmd
}
