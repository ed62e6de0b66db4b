package zke

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// What zke may write and delete on a node.
//
// The standard: zke never deletes what it cannot prove it wrote, and never
// writes into what it cannot prove is its own. The proof is a record in
// the State (State.Owned, by node address) of the paths on the node that
// zke found free (absent, or an empty directory) before it wrote there:
//   - preflight probes each path the node's roles need (zkePaths): a free
//     one is recorded; one that holds something (a non-empty directory, a
//     file, a symbolic link) and is not recorded already stops the run
//     with a *ForeignPathError naming the node and the path. Preflight
//     changes nothing on the hosts;
//   - the preflight checkpoint stores the record before any later step
//     makes or writes a recorded path (an upload's mkdir, Docker making a
//     bind's missing source, the kubelet's mkdir -p). A resumed or retried
//     run finds its half-made directories recorded and never mistakes
//     them for foreign ones;
//   - clean-up (cluster delete, node removal) deletes only recorded paths
//     and reports the other zke paths that hold something as left; a
//     restore works only in recorded directories.
//
// Clusters installed by an earlier release have no record: every path of
// a node that the State's Applied configuration lists was written by zke
// (that install finished), so the record of such a node is made from its
// applied roles (earlierRelease) and stored at the next preflight. An earlier
// release's unfinished create has no Applied configuration: its paths are
// foreign to this release (preflight says to move them away).

// zkePath is a file or directory zke writes on a node.
type zkePath struct {
	path string
	dir  bool
}

// pathState is what the probe found at a path.
type pathState string

const (
	pathAbsent   pathState = "absent"
	pathEmpty    pathState = "empty" // an empty directory
	pathNonEmpty pathState = "nonempty"
	pathFile     pathState = "file" // anything that is neither a directory nor a symlink
	pathSymlink  pathState = "symlink"
)

// describe says what a foreign path holds, for messages.
func (s pathState) describe() string {
	switch s {
	case pathEmpty:
		return "a directory"
	case pathNonEmpty:
		return "a non-empty directory"
	case pathSymlink:
		return "a symbolic link"
	}
	return "a file"
}

// zkePaths are the paths zke writes on n in this run: the certificates
// everywhere, etcd's data (and a restore's scratch) on etcd nodes, the
// shared endpoint's configuration on control-plane nodes, the kubelet's
// directories, configuration and pod network config on workers.
func (r *run) zkePaths(n node) []zkePath {
	// Preflight asked the node's containerd where its CNI configs go
	// (checkRuntimes) before it checks the paths.
	ps := pathsOf(n, r.sharedEndpoint(), r.snapshot().Restore != nil, r.cniConfPath(n))
	if n.HasRole(model.RoleWorker) {
		// The kubelet's binaries (kubelet_binary.go). Not in pathsOf:
		// an earlier release never wrote there, so its clusters' nodes
		// are not given it by earlierRelease.
		ps = append(ps, zkePath{n.dir(dirZke), true})
	}
	return ps
}

// pathsOf are the paths n's roles need; sharedEndpoint and restore add
// the shared endpoint's configuration and the restore's scratch, cniConf
// is where a worker's pod network config goes.
func pathsOf(n node, sharedEndpoint, restore bool, cniConf string) []zkePath {
	ps := []zkePath{{n.dir(dirSSL), true}}
	if n.HasRole(model.RoleEtcd) {
		ps = append(ps, zkePath{n.dir(dirEtcdData), true})
		if restore {
			ps = append(ps, zkePath{n.dir(dirEtcdRestore), true})
		}
	}
	if n.HasRole(model.RoleControlPlane) && sharedEndpoint {
		ps = append(ps, zkePath{n.dir(dirKubeLB), true})
	}
	if n.HasRole(model.RoleWorker) {
		ps = append(ps, zkePath{n.dir(dirKubelet), true}, zkePath{n.dir(dirPodLogs), true}, zkePath{n.dir(dirContainers), true},
			zkePath{kubeletConfigFile(n), false}, zkePath{cniConf, false})
	}
	return ps
}

// allPaths are the paths any zke install may have written on n, whatever
// its roles: the candidates clean-up reports as left when not n's.
func allPaths(n node) []string {
	every := n
	every.Roles = []model.Role{model.RoleEtcd, model.RoleControlPlane, model.RoleWorker}
	var out []string
	for _, p := range pathsOf(every, true, true, cniConfFile) {
		out = append(out, p.path)
	}
	return out
}

// isZkePath reports whether p is one of zke's paths under some prefix (an
// absolute, clean directory), its pod network config's name in some
// directory, a CNI plugin's name in some directory, or zke's binary
// directory under some prefix: a record from the store is deleted only when it is, so that
// no record, however made, can name another path.
func isZkePath(p string) bool {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	if isCNIPluginPath(p) || isZkeBinPath(p) {
		// A CNI plugin zke installed (step_artifacts.go), in whichever
		// directory the node's containerd runs plugins from, or the
		// kubelet's binary directory (kubelet_binary.go).
		return true
	}
	for _, z := range allPaths(node{}) {
		if z == cniConfFile {
			// In whichever directory the node's containerd reads.
			if isCNIConfPath(p) {
				return true
			}
			continue
		}
		prefix, ok := strings.CutSuffix(p, z)
		if ok && (prefix == "" || path.Clean(prefix) == prefix && path.IsAbs(prefix)) {
			return true
		}
	}
	return false
}

// ownedPaths are the paths the State records as zke's on n (see
// earlierRelease for a node without a record), sorted; only zke's own
// names (isZkePath).
func (r *run) ownedPaths(n node) []string {
	return ownedIn(r.snapshot(), n)
}

// ownedIn is ownedPaths of st.
func ownedIn(st State, n node) []string {
	rec, ok := st.Owned[n.Address]
	if !ok {
		rec, _ = earlierRelease(st, n)
	}
	var out []string
	for _, p := range rec {
		if isZkePath(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// earlierRelease returns the paths zke wrote on n when n has no record
// but st's applied configuration lists it (by address): a cluster an
// earlier release installed, whose finished install wrote every path of
// n's applied roles. ok is false for any other node.
func earlierRelease(st State, n node) (paths []string, ok bool) {
	if _, recorded := st.Owned[n.Address]; recorded || st.Applied == nil {
		return nil, false
	}
	for _, an := range nodesOf(*st.Applied) {
		if an.Address != n.Address {
			continue
		}
		for _, p := range pathsOf(an, st.Applied.SharedEndpoint() != "", true, cniConfFile) {
			paths = append(paths, p.path)
		}
		return paths, true
	}
	return nil, false
}

// record makes the State's record of n: what it proves zke's now (an
// earlier release's paths included) and paths.
func (r *run) record(n node, paths []string) {
	r.update(func(st *State) {
		all := append(ownedIn(*st, n), paths...)
		slices.Sort(all)
		if st.Owned == nil {
			st.Owned = map[string][]string{}
		}
		st.Owned[n.Address] = append([]string{}, slices.Compact(all)...)
	})
}

// disown empties the State's record of n, a node that left the cluster
// (cleaned, or left to be cleaned by hand): nothing found there later is
// zke's, not even by earlierRelease.
func (r *run) disown(n node) {
	r.update(func(st *State) {
		if st.Owned == nil {
			st.Owned = map[string][]string{}
		}
		st.Owned[n.Address] = []string{}
	})
}

// pathStateFunc is a shell function printing what is at "$1" as a
// pathState. A symlink is never followed: zke makes none.
const pathStateFunc = `zke_path_state() {
  if [ -L "$1" ]; then echo symlink
  elif [ ! -e "$1" ]; then echo absent
  elif [ -d "$1" ]; then if e=$(ls -A -- "$1" 2>/dev/null) && [ -z "$e" ]; then echo empty; else echo nonempty; fi
  else echo file; fi
}`

// probeScript prints, one line each, the index of every path and what is
// there.
func probeScript(paths []string) string {
	lines := []string{pathStateFunc}
	for i, p := range paths {
		lines = append(lines, fmt.Sprintf(`echo %d "$(zke_path_state %s)"`, i, shellQuote(p)))
	}
	return strings.Join(lines, "\n")
}

// parseProbe reads probeScript's output for n paths.
func parseProbe(out string, n int) ([]pathState, error) {
	states := make([]pathState, n)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("path probe: unexpected line %q", sc.Text())
		}
		i, err := strconv.Atoi(f[0])
		if err != nil || i < 0 || i >= n {
			return nil, fmt.Errorf("path probe: unexpected line %q", sc.Text())
		}
		switch s := pathState(f[1]); s {
		case pathAbsent, pathEmpty, pathNonEmpty, pathFile, pathSymlink:
			states[i] = s
		default:
			return nil, fmt.Errorf("path probe: unexpected state %q", s)
		}
	}
	for i, s := range states {
		if s == "" {
			return nil, fmt.Errorf("path probe: no answer for path %d", i)
		}
	}
	return states, nil
}

// planClaims returns, of paths, given what the probe found at each, those
// free for zke (absent, or an empty directory where zke makes a
// directory) and, as *ForeignPathErrors, those that hold something else.
// owned paths are zke's whatever is there.
func planClaims(paths []zkePath, states []pathState, owned []string) (free []string, foreign []error) {
	for i, z := range paths {
		if slices.Contains(owned, z.path) {
			continue
		}
		switch s := states[i]; {
		case s == pathAbsent || s == pathEmpty && z.dir:
			free = append(free, z.path)
		default:
			foreign = append(foreign, &ForeignPathError{Path: z.path, What: s.describe()})
		}
	}
	return free, foreign
}

// checkPaths probes the paths n's roles need (see zkePaths) and returns
// those free for zke, which preflight records once n passed, and those
// that hold something zke did not make.
func (r *run) checkPaths(ctx context.Context, n node, c *transport.Client) (free []string, foreign []error, err error) {
	paths := r.zkePaths(n)
	list := make([]string, len(paths))
	for i, p := range paths {
		list[i] = p.path
	}
	states, err := probePaths(ctx, n, c, list)
	if err != nil {
		return nil, nil, err
	}
	free, foreign = planClaims(paths, states, r.ownedPaths(n))
	return free, foreign, nil
}

// probePaths says what is at each of paths on n.
func probePaths(ctx context.Context, n node, c *transport.Client, paths []string) ([]pathState, error) {
	res, err := c.Exec(ctx, probeScript(paths), transport.ExecOptions{})
	if err != nil {
		return nil, nodeErr(n, fmt.Errorf("look at zke's paths: %w", err), "")
	}
	states, err := parseProbe(string(res.Stdout), len(paths))
	if err != nil {
		return nil, nodeErr(n, err, "")
	}
	return states, nil
}

// foreignHint says what to do about the foreign paths among errs on n.
func (r *run) foreignHint(n node, errs []error) string {
	var paths []string
	for _, err := range errs {
		var fp *ForeignPathError
		if errors.As(err, &fp) {
			paths = append(paths, fp.Path)
		}
	}
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf("zke neither writes into nor deletes what it did not make: on %s move %s away (for example mv %s %s), or set %s to a directory where zke has its own",
		n.Name, strings.Join(paths, ", "), shellQuote(paths[0]), shellQuote(paths[0]+".before-zke"), r.nodeField(n, "prefixPath"))
}

// nodeProblems is one error of a node's preflight problems (sentences)
// and foreign paths, each matched by errors.Is/As.
func nodeProblems(problems []string, foreign []error) error {
	var all problemList
	if len(problems) > 0 {
		all = append(all, errors.New(strings.Join(problems, "; ")))
	}
	return append(all, foreign...)
}

// mustOwn refuses work in paths on n that the State does not prove zke's.
func (r *run) mustOwn(n node, paths ...string) error {
	owned := r.ownedPaths(n)
	var foreign problemList
	for _, p := range paths {
		if !slices.Contains(owned, p) {
			foreign = append(foreign, &ForeignPathError{Path: p})
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	return workflow.UserFixable(nodeErr(n, foreign, r.foreignHint(n, foreign)))
}
