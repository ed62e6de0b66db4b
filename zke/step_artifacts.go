package zke

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// stepArtifacts installs the release files no image carries.
const stepArtifacts = model.StepArtifacts

// installArtifacts puts on each worker the release files no image
// carries: the kubelet of the cluster's version (kubelet_binary.go) and
// the CNI plugins its pod network config chains, in the directory its
// containerd runs them from, when containerd finds them in none of its
// plugin directories (a host with containerd's defaults has an empty
// /opt/cni/bin). Each file is fetched once into the singlecloud server's
// artifact cache from the cluster's artifactMirror (or upstream) and
// verified against the SHA-256 its project publishes beside it, uploaded
// over SFTP, and its digest checked on the node. A plugin a directory
// already holds is used as it is and never overwritten.
func (r *run) installArtifacts(ctx context.Context, rep *workflow.Reporter) error {
	ws := withRole(r.nodes, model.RoleWorker)
	names, err := cniPluginsNeeded()
	if err != nil || len(ws) == 0 {
		return err
	}
	var mu sync.Mutex
	byArch := map[string][]cniPlugin{}
	plugins := func(ctx context.Context, n node) ([]cniPlugin, error) {
		arch := releaseArch(r.factsOf(n).docker.Arch)
		if arch == "" {
			return nil, workflow.UserFixable(nodeErr(n, fmt.Errorf("architecture %q: zke installs CNI plugins for amd64 and arm64 only", r.factsOf(n).docker.Arch), ""))
		}
		mu.Lock()
		defer mu.Unlock()
		if ps, ok := byArch[arch]; ok {
			return ps, nil
		}
		got, err := r.fetch(ctx, rep, cniPluginsRelease(arch))
		if err != nil {
			return nil, err
		}
		ps, err := extractCNIPlugins(got.Path, names)
		if err != nil {
			return nil, err
		}
		byArch[arch] = ps
		return ps, nil
	}
	return workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		if err := r.installKubelet(ctx, rep, n); err != nil {
			return err
		}
		return r.installCNIPlugins(ctx, rep, n, names, plugins)
	})
}

// fetch returns file verified in the artifact cache, fetched at most
// once per run. A checksum mismatch or a file the mirror lacks is the
// user's to fix.
func (r *run) fetch(ctx context.Context, rep *workflow.Reporter, file artifacts.File) (artifacts.Fetched, error) {
	if r.in.artifacts == nil {
		return artifacts.Fetched{}, workflow.UserFixable(fmt.Errorf("singlecloud was started without an artifact cache (--artifact-dir), so zke cannot install %s", file.Name()))
	}
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	if got, ok := r.fetched[file.URL]; ok {
		return got, nil
	}
	got, err := r.in.artifacts.Fetch(ctx, file, r.artifactMirror())
	if err != nil {
		if errors.Is(err, artifacts.ErrChecksum) || errors.Is(err, artifacts.ErrNotFound) {
			return got, workflow.UserFixable(err)
		}
		return got, err
	}
	if got.Source != "" {
		rep.Report("", fmt.Sprintf("downloaded %s from %s, SHA-256 %s as published", file.Name(), got.Source, got.SHA256))
	} else {
		rep.Logf("", "%s in the artifact cache, SHA-256 %s as published", file.Name(), got.SHA256)
	}
	if r.fetched == nil {
		r.fetched = map[string]artifacts.Fetched{}
	}
	r.fetched[file.URL] = got
	return got, nil
}

// artifactMirror is where release files are fetched from: the cluster's
// artifactMirror, else singlecloud's default, else "" (upstream).
func (r *run) artifactMirror() string {
	if r.cfg.ArtifactMirror != "" {
		return r.cfg.ArtifactMirror
	}
	return r.in.artifactMirror
}

// installCNIPlugins installs on n each of names that n's containerd finds
// in none of its plugin directories, into the first of them. The paths
// are recorded as zke's (found free) before the upload, so that clean-up
// removes them and nothing else.
func (r *run) installCNIPlugins(ctx context.Context, rep *workflow.Reporter, n node, names []string,
	plugins func(context.Context, node) ([]cniPlugin, error)) error {
	c, err := r.client(n)
	if err != nil {
		return err
	}
	dirs := r.cniBinDirs(n)
	states, err := probeCNIPluginStates(ctx, c, names, dirs)
	if err != nil {
		return nodeErr(n, err, "")
	}
	var missing, found, occupied []string
	for _, name := range names {
		switch s := states[name]; {
		case s.foundIn != "":
			found = append(found, path.Join(s.foundIn, name))
		case s.occupied:
			occupied = append(occupied, path.Join(dirs[0], name))
		default:
			missing = append(missing, name)
		}
	}
	if len(occupied) > 0 {
		return workflow.UserFixable(nodeErr(n, fmt.Errorf("%s: %w: not an executable file, and zke will not overwrite it", strings.Join(occupied, ", "), ErrForeignPath),
			"move it away, or make it the CNI plugin it is named after"))
	}
	if len(missing) == 0 {
		rep.Report(n.Name, "CNI plugins present: "+strings.Join(found, ", "))
		return nil
	}
	ps, err := plugins(ctx, n)
	if err != nil {
		return err
	}
	var targets []string
	for _, name := range missing {
		targets = append(targets, path.Join(dirs[0], name))
	}
	r.record(n, targets)
	for _, p := range ps {
		if !slices.Contains(missing, p.name) {
			continue
		}
		target := path.Join(dirs[0], p.name)
		if err := c.UploadFrom(ctx, target, bytes.NewReader(p.data), 0o755); err != nil {
			return nodeErr(n, fmt.Errorf("install CNI plugin %s: %w", target, err), "")
		}
		if err := checkNodeDigest(ctx, c, target, p.sha256); err != nil {
			return nodeErr(n, err, "")
		}
	}
	rep.Report(n.Name, fmt.Sprintf("installed CNI plugins %s (%s) in %s", strings.Join(missing, ", "), cniPluginsVersion, dirs[0]))
	return nil
}

// probeCNIPluginStates runs cniPluginProbeScript on the node, bounded.
func probeCNIPluginStates(ctx context.Context, c *transport.Client, names, dirs []string) (map[string]cniPluginState, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	res, err := c.Exec(ctx, cniPluginProbeScript(names, dirs), transport.ExecOptions{})
	if err != nil {
		return nil, fmt.Errorf("look for the CNI plugins in %s: %w", strings.Join(dirs, ", "), err)
	}
	return parseCNIPluginProbe(string(res.Stdout)), nil
}

// digestTimeout bounds sha256sum of an installed file on a node. It reads
// the whole file: a kubelet (~80 MB) hashes in a fraction of a second on
// a server, but past probeTimeout on a slow board or a loaded, emulated
// machine (an upgrade on three Debian VMs under QEMU's TCG timed out at
// 5 s); two minutes cover it at under 1 MB/s.
const digestTimeout = 2 * time.Minute

// checkNodeDigest compares the SHA-256 of the file p on the node with
// want.
func checkNodeDigest(ctx context.Context, c *transport.Client, p, want string) error {
	ctx, cancel := context.WithTimeout(ctx, digestTimeout)
	defer cancel()
	res, err := c.Exec(ctx, "sha256sum "+shellQuote(p), transport.ExecOptions{})
	if err != nil {
		return fmt.Errorf("check the SHA-256 of %s: %w", p, err)
	}
	if got, _, _ := strings.Cut(strings.TrimSpace(string(res.Stdout)), " "); got != want {
		return fmt.Errorf("%s has SHA-256 %s after the upload, want %s", p, got, want)
	}
	return nil
}

// artifactsFingerprint hashes what the step installs: the kubelet's
// version, the plugins' release and names, and the workers with their
// plugin directories.
func (r *run) artifactsFingerprint() (string, error) {
	names, err := cniPluginsNeeded()
	if err != nil {
		return "", err
	}
	type worker struct {
		Node nodeInputs
		Dirs []string
	}
	in := struct {
		Version, Kubernetes string
		Plugins             []string
		Workers             []worker
	}{Version: cniPluginsVersion, Kubernetes: r.cfg.KubernetesVersion, Plugins: names}
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		in.Workers = append(in.Workers, worker{Node: inputsOf(n), Dirs: r.cniBinDirs(n)})
	}
	return fingerprint(stepArtifacts, in)
}

// verifyArtifacts checks that every worker has the kubelet of the
// cluster's version, as published, and that its containerd finds each
// plugin the pod network needs.
func (r *run) verifyArtifacts(ctx context.Context, rep *workflow.Reporter) error {
	names, err := cniPluginsNeeded()
	if err != nil {
		return err
	}
	return workflow.ForEach(ctx, withRole(r.nodes, model.RoleWorker), nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		if err := r.verifyKubelet(ctx, rep, n, c); err != nil {
			return err
		}
		states, err := probeCNIPluginStates(ctx, c, names, r.cniBinDirs(n))
		if err != nil {
			return nodeErr(n, err, "")
		}
		for _, name := range names {
			if states[name].foundIn == "" {
				return stale(n, "lacks CNI plugin %s", name)
			}
		}
		return nil
	})
}
