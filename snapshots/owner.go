package snapshots

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/zdnscloud/singlecloud/storage"
)

// ownerFile marks the installation a snapshot directory belongs to: the
// store's mark (proof.go), a constant sealed with the installation's key.
// Its replicas share the key (and may share the directory); another
// installation's key cannot open it. Two installations given one
// directory (two databases in one folder, two etcd prefixes whose key
// files sit side by side) would otherwise overwrite, prune and delete each
// other's snapshots of same-named clusters.
const ownerFile = markFile

// claim makes dir this installation's, or refuses it: with ErrForeignDir
// when another installation owns it, with ErrNotOwned when it holds files
// that are not snapshots of this installation. A directory without the
// owner file is claimed when it is empty (new), or when everything in it
// has the layout of a snapshot directory of an earlier release and its
// snapshots open with this key: the installation whose snapshots they are
// is the one that may claim it, whichever starts first. Nothing is
// removed here.
func claim(dir string, sealer storage.Sealer) error {
	state, err := readMark(dir, sealer, roleStore)
	if err != nil {
		return err
	}
	if state == markMissing {
		if err := adoptable(dir, sealer); err != nil {
			return err
		}
		// Exclusive: of two installations claiming at once, the
		// first file stays and the other is refused below.
		if err := createMark(dir, sealer, roleStore); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("claim %s: %w", dir, err)
		}
		if state, err = readMark(dir, sealer, roleStore); err != nil {
			return err
		}
	}
	if state != markOurs {
		return foreign(dir, "its owner file")
	}
	return nil
}

func foreign(dir, what string) error {
	return fmt.Errorf("snapshot directory %s belongs to another singlecloud installation (%s does not open with this "+
		"installation's key file): give this installation a --snapshot-dir of its own: %w", dir, what, ErrForeignDir)
}

func notOwned(dir string, names []string) error {
	sort.Strings(names)
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return fmt.Errorf("snapshot directory %s is not empty and singlecloud did not create it (it holds %q): singlecloud "+
		"keeps its snapshots in a directory of its own and never adopts one holding other files: give --snapshot-dir "+
		"(SINGLECLOUD_SNAPSHOT_DIR) a new or empty directory: %w", dir, names, ErrNotOwned)
}

// adoptable checks that an unmarked dir may be claimed: it is empty, or it
// holds only what an earlier release wrote (a scratch directory, and
// cluster directories of records and sealed snapshots) and its sealed
// snapshots open with sealer.
func adoptable(dir string, sealer storage.Sealer) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	var other []string
	for _, e := range entries {
		switch {
		case e.Name() == scratchName && e.IsDir():
		case e.IsDir() && clusterRE.MatchString(e.Name()):
			names, err := checkLegacyCluster(dir, e.Name(), sealer)
			if err != nil {
				return err
			}
			other = append(other, names...)
		default:
			other = append(other, e.Name())
		}
	}
	if len(other) > 0 {
		return notOwned(dir, other)
	}
	return nil
}

// checkLegacyCluster returns the names in dir/cluster that the store does
// not write, and fails with ErrForeignDir on a sealed snapshot that does
// not open with sealer.
func checkLegacyCluster(dir, cluster string, sealer storage.Sealer) ([]string, error) {
	cdir := filepath.Join(dir, cluster)
	files, err := os.ReadDir(cdir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", cdir, err)
	}
	var other []string
	for _, f := range files {
		kind, id := classify(f)
		switch kind {
		case entryOther:
			other = append(other, filepath.Join(cluster, f.Name()))
		case entrySnap:
			state, err := provenSnapshot(filepath.Join(cdir, f.Name()), sealer, cluster, id)
			if err != nil {
				return nil, err
			}
			if state != sealedOurs {
				return nil, foreign(dir, "snapshot "+cluster+"/"+id)
			}
		}
	}
	return other, nil
}
