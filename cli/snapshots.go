package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// snapshotKind prints a cluster's etcd snapshots.
func snapshotKind() kind {
	return kind{name: "snapshot", columns: []column{
		col("ID", "id"),
		col("TRIGGER", "trigger"),
		col("MEMBER", "member"),
		{header: "SIZE", cell: func(o object) string { return mebibytes(field(o, "size")) }},
		col("REVISION", "revision"),
		col("VERIFICATION", "verification"),
		ageCol("AGE", time.Now, "createdAt"),
		wideCol("KEYS", "keyCount"),
		wideCol("TAKEN BY", "takenBy"),
		wideCol("SHA256", "sha256"),
	}}
}

func (a *app) snapshotCmd() *cobra.Command {
	path := func(args []string) string {
		p := "/clusters/" + url.PathEscape(args[0]) + "/snapshots"
		if len(args) > 1 {
			p += "/" + url.PathEscape(args[1])
		}
		return p
	}
	cmd := &cobra.Command{Use: "snapshot", Aliases: []string{"snapshots"}, Short: "Take, list, download and delete a created cluster's etcd snapshots (admin)"}
	cmd.AddCommand(
		a.listCmd("list CLUSTER", "List the cluster's snapshots and whether each passed its restore drill", snapshotKind(), path, "CLUSTER"),
		a.getCmd("get CLUSTER ID", "Show one snapshot", snapshotKind(), "table", path, "CLUSTER", "ID"),
		&cobra.Command{
			Use:   "take CLUSTER",
			Short: "Take a snapshot now (done once it is stored, sealed, on the server)",
			Args:  exactArgs("CLUSTER"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, _, err := a.session()
				if err != nil {
					return err
				}
				var got object
				if err := c.do(cmd.Context(), http.MethodPost, path(args), nil, nil, &got); err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "snapshot/%s taken (%s, revision %s)\n", printable(str(got["id"])), mebibytes(field(got, "size")), printable(field(got, "revision")))
				return nil
			},
		},
		&cobra.Command{
			Use:   "delete CLUSTER ID",
			Short: "Delete a snapshot",
			Args:  exactArgs("CLUSTER", "ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, _, err := a.session()
				if err != nil {
					return err
				}
				if err := c.do(cmd.Context(), http.MethodDelete, path(args), nil, nil, nil); err != nil {
					return err
				}
				fmt.Fprintf(a.Out, "snapshot/%s deleted\n", args[1])
				return nil
			},
		},
		a.snapshotDownloadCmd(path),
	)
	return cmd
}

// snapshotDownloadCmd saves a snapshot's plaintext etcd file (0600),
// checked against the sha256 the server announces.
func (a *app) snapshotDownloadCmd(path func([]string) string) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "download CLUSTER ID -f FILE",
		Short: "Download a snapshot (the plaintext etcd snapshot file, mode 0600)",
		Args:  exactArgs("CLUSTER", "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("download needs -f FILE (the snapshot holds every secret of the cluster: it is never written to a terminal)")
			}
			c, _, err := a.session()
			if err != nil {
				return err
			}
			resp, err := c.stream(cmd.Context(), path(args), url.Values{"download": {"1"}})
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var (
				n       int64
				sum     string
				fillErr error
			)
			// A transfer that breaks off (the server found the snapshot
			// corrupt part way, or the connection dropped) leaves nothing:
			// the temporary file is removed, out is never written.
			err = durable.WriteFile(out, 0o600, func(w io.Writer) error {
				h := sha256.New()
				n, fillErr = io.Copy(io.MultiWriter(w, h), resp.Body)
				if fillErr != nil {
					fillErr = fmt.Errorf("download snapshot %s: the transfer broke off after %d bytes and nothing was written to %s: %w; "+
						"run the download again (if it breaks off again, the server's log says why: a corrupt snapshot is deleted and taken anew)", args[1], n, out, fillErr)
					return fillErr
				}
				sum = hex.EncodeToString(h.Sum(nil))
				if want := resp.Header.Get("X-Snapshot-Sha256"); want != "" && want != sum {
					fillErr = fmt.Errorf("download snapshot %s: sha256 %s, but the server announced %s: the copy is damaged", args[1], sum, want)
					return fillErr
				}
				return nil
			})
			switch {
			case err != nil && err == fillErr:
				return err
			case err != nil:
				return fmt.Errorf("download snapshot %s: write %s: %w", args[1], out, err)
			}
			fmt.Fprintf(a.Err, "Wrote snapshot %s to %s (%s, sha256 %s, mode 0600).\n", args[1], out, mebibytes(fmt.Sprint(n)), sum)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "filename", "f", "", "the file to write (mode 0600)")
	return cmd
}
