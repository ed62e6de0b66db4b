package zke

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/artifacts"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// Where zke keeps the release binaries it runs on a worker (under the
// node's prefix): dirZke, recorded as zke's at preflight, holds dirZkeBin
// with the kubelet of each installed version.
const (
	dirZke    = "/opt/zke"
	dirZkeBin = dirZke + "/bin"
)

// kubeletRelease is the kubelet binary of version for arch as the
// Kubernetes project publishes it, with its .sha256 beside it.
func kubeletRelease(version, arch string) artifacts.File {
	u := fmt.Sprintf("https://dl.k8s.io/release/%s/bin/linux/%s/kubelet", version, arch)
	return artifacts.File{URL: u, ChecksumURL: u + ".sha256"}
}

// kubeletBinary is where the kubelet of version lives on n: one file per
// version, so that an upgrade's new kubelet never replaces the binary a
// running one (or a revert) uses.
func kubeletBinary(n node, version string) string {
	return path.Join(n.dir(dirZkeBin), "kubelet-"+version)
}

// isZkeBinPath reports whether p is zke's binary directory, dirZke,
// under some prefix (an absolute, clean directory): the one path of
// zke's release binaries a record from the store may name.
func isZkeBinPath(p string) bool {
	prefix, ok := strings.CutSuffix(p, dirZke)
	return ok && (prefix == "" || path.Clean(prefix) == prefix && path.IsAbs(prefix))
}

// installKubelet puts the kubelet of the cluster's version on worker n
// when it is not there with the published digest: fetched (once per run
// and architecture) into the artifact cache and verified, uploaded over
// SFTP into zke's binary directory, and its digest checked on the node.
func (r *run) installKubelet(ctx context.Context, rep *workflow.Reporter, n node) error {
	arch := releaseArch(r.factsOf(n).docker.Arch)
	if arch == "" {
		return workflow.UserFixable(nodeErr(n, fmt.Errorf("architecture %q: zke installs the kubelet for amd64 and arm64 only", r.factsOf(n).docker.Arch), ""))
	}
	got, err := r.fetch(ctx, rep, kubeletRelease(r.cfg.KubernetesVersion, arch))
	if err != nil {
		return err
	}
	c, err := r.client(n)
	if err != nil {
		return err
	}
	target := kubeletBinary(n, r.cfg.KubernetesVersion)
	if checkNodeDigest(ctx, c, target, got.SHA256) == nil {
		rep.Report(n.Name, fmt.Sprintf("kubelet %s present with the published SHA-256", r.cfg.KubernetesVersion))
		return nil
	}
	f, err := os.Open(got.Path)
	if err != nil {
		return fmt.Errorf("artifact cache: %w", err)
	}
	defer f.Close()
	if err := c.UploadFrom(ctx, target, f, 0o755); err != nil {
		return nodeErr(n, fmt.Errorf("install the kubelet %s: %w", target, err), "")
	}
	if err := checkNodeDigest(ctx, c, target, got.SHA256); err != nil {
		return nodeErr(n, err, "")
	}
	rep.Report(n.Name, fmt.Sprintf("installed kubelet %s in %s (SHA-256 %s, as published)", r.cfg.KubernetesVersion, path.Dir(target), got.SHA256))
	return nil
}

// verifyKubelet checks that worker n has the kubelet of the cluster's
// version with the digest the artifact cache holds for it.
func (r *run) verifyKubelet(ctx context.Context, rep *workflow.Reporter, n node, c *transport.Client) error {
	arch := releaseArch(r.factsOf(n).docker.Arch)
	got, err := r.fetch(ctx, rep, kubeletRelease(r.cfg.KubernetesVersion, arch))
	if err != nil {
		return err
	}
	if err := checkNodeDigest(ctx, c, kubeletBinary(n, r.cfg.KubernetesVersion), got.SHA256); err != nil {
		return stale(n, "%v", err)
	}
	return nil
}
