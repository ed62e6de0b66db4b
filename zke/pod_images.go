package zke

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// podImageImportTimeout bounds copying one image from a node's Docker
// into its containerd.
const podImageImportTimeout = 5 * time.Minute

// podImages are the images of the pods zke deploys (CoreDNS, and
// flannel, which runs either pod network). The kubelet runs pods in
// containerd's CRI namespace, not in Docker, so the images step makes
// sure they are there too.
func (r *run) podImages() []string {
	if r.runsFlannel() {
		return []string{r.images[model.ImageCoreDNS], r.images[model.ImageFlannel]}
	}
	return []string{r.images[model.ImageCoreDNS]}
}

// podImagesOf are the images containerd needs on worker n: the pod
// images, and the sandbox image its containerd runs every pod in, when
// preflight learnt it (containerd 1.x says; 2.x does not, and its
// default is kubeadm's pause of the same release, which an image bundle
// carries).
func (r *run) podImagesOf(n node) []string {
	images := r.podImages()
	if s := r.factsOf(n).cri.sandboxImage; s != "" && !slices.Contains(images, s) {
		images = append(images, s)
	}
	return images
}

// ensurePodImages makes the pod images available to the containerd that
// n's kubelet uses. An image containerd lacks is brought into n's Docker
// the way component images are (already there, the image archive, or a
// pull with the private registry's credentials) and copied from Docker
// into containerd (docker save | ctr import), so an air-gapped node or a
// private registry serves pods as well as components. A node without ctr
// is left to pull the images itself, with a warning.
func (r *run) ensurePodImages(ctx context.Context, rep *workflow.Reporter, n node, d *runtime.Docker) error {
	c, err := r.client(n)
	if err != nil {
		return err
	}
	for _, ref := range r.podImagesOf(n) {
		state, err := ctrImageState(ctx, c, n.ContainerdSocket, ref)
		if err != nil {
			return nodeErr(n, fmt.Errorf("look up image %s in containerd: %w", ref, err), "")
		}
		switch {
		case state == ctrPresent:
			continue
		case state == ctrUnavailable:
			rep.Warnf(n.Name, "cannot check containerd's images (no ctr, or no socket at %s): the kubelet will pull %s itself", n.ContainerdSocket, ref)
			continue
		case strings.Contains(ref, "@"):
			// docker save writes no name for a digest reference, so
			// the import could not be found under ref.
			rep.Warnf(n.Name, "%s is pinned by digest and cannot be copied from Docker into containerd: the kubelet will pull it itself", ref)
			continue
		}
		if err := r.ensureDockerImages(ctx, rep, n, d, []string{ref}); err != nil {
			return err
		}
		rep.Report(n.Name, "copying "+ref+" from Docker into containerd")
		on := waitOn{rep: rep, node: n.Name}
		on.waiting("copy of "+ref+" into containerd", nil)
		err = copyToContainerd(ctx, c, d, n.ContainerdSocket, ref)
		on.done()
		if err != nil {
			return nodeErr(n, fmt.Errorf("copy image %s into containerd: %w", ref, err), "")
		}
		state, err = ctrImageState(ctx, c, n.ContainerdSocket, ref)
		if err != nil {
			return nodeErr(n, fmt.Errorf("look up image %s in containerd after the import: %w", ref, err), "")
		}
		if state != ctrPresent {
			return nodeErr(n, fmt.Errorf("image %s is not in containerd after the import (%s)", ref, state), "")
		}
	}
	return nil
}

// ctrState is what ctrImageState found.
type ctrState string

const (
	ctrPresent     ctrState = "present"
	ctrMissing     ctrState = "missing"
	ctrUnavailable ctrState = "unavailable" // no ctr binary or no socket
)

// ctrImageState asks the node's containerd (through ctr, in the CRI
// namespace k8s.io) whether it has ref.
func ctrImageState(ctx context.Context, c *transport.Client, socket, ref string) (ctrState, error) {
	script := fmt.Sprintf(`a=%s
command -v ctr >/dev/null 2>&1 && [ -S "$a" ] || { echo unavailable; exit 0; }
if [ -n "$(ctr -a "$a" -n k8s.io images ls -q %s)" ]; then echo present; else echo missing; fi`,
		shellQuote(socket), shellQuote("name=="+containerdRef(ref)))
	ctx, cancel := context.WithTimeout(ctx, probeTimeout*2)
	defer cancel()
	res, err := c.Exec(ctx, script, transport.ExecOptions{})
	if err != nil {
		return "", err
	}
	switch s := ctrState(strings.TrimSpace(string(res.Stdout))); s {
	case ctrPresent, ctrMissing, ctrUnavailable:
		return s, nil
	default:
		return "", fmt.Errorf("unexpected answer %q", s)
	}
}

// copyToContainerd streams ref from d (docker save) into the node's
// containerd (ctr images import from standard input).
func copyToContainerd(ctx context.Context, c *transport.Client, d *runtime.Docker, socket, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, podImageImportTimeout)
	defer cancel()
	archive, err := d.Save(ctx, ref)
	if err != nil {
		return err
	}
	defer archive.Close()
	_, err = c.Exec(ctx, fmt.Sprintf("ctr -a %s -n k8s.io images import -", shellQuote(socket)), transport.ExecOptions{Stdin: archive})
	return err
}

// containerdRef is ref as containerd names it: with its registry
// (docker.io when none), Docker Hub's library/ for one-word names, and
// :latest when it has neither tag nor digest.
func containerdRef(ref string) string {
	name := ref
	if i := strings.IndexByte(name, '/'); i < 0 || (!strings.ContainsAny(name[:i], ".:") && name[:i] != "localhost") {
		if i < 0 {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	last := name[strings.LastIndexByte(name, '/')+1:]
	if !strings.ContainsAny(last, ":@") {
		name += ":latest"
	}
	return name
}
