package zke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// pullImages makes sure every node has the images its components run:
// already there, loaded from the configured image archive (the air-gapped
// path: streamed through the SSH tunnel into docker load), or pulled from
// the registry, with the private registry's credentials. Workers also get
// the pod images in their kubelet's containerd (see ensurePodImages).
func (r *run) pullImages(ctx context.Context, rep *workflow.Reporter) error {
	return workflow.ForEach(ctx, r.nodes, nodeConcurrency, func(ctx context.Context, n node) error {
		d, err := r.docker(n)
		if err != nil {
			return err
		}
		if err := r.ensureDockerImages(ctx, rep, n, d, r.imagesFor(n)); err != nil {
			return err
		}
		if n.HasRole(model.RoleWorker) {
			if err := r.ensurePodImages(ctx, rep, n, d); err != nil {
				return err
			}
		}
		rep.Report(n.Name, "images present")
		return nil
	})
}

// imagesFor lists the images n's containers run, by its roles: etcd's on
// an etcd node; the API server's, controller manager's and scheduler's
// (and the load balancer's, with a shared endpoint) on a control-plane
// node; the kubelet's and kube-proxy's on a worker. Components that share
// an image (the all-in-one model.ImageKubernetes) list it once.
func (r *run) imagesFor(n node) []string {
	var keys []string
	if n.HasRole(model.RoleEtcd) {
		keys = append(keys, model.ImageEtcd)
	}
	if n.HasRole(model.RoleControlPlane) {
		keys = append(keys, model.ImageKubeAPIServer, model.ImageKubeControllerManager, model.ImageKubeScheduler)
		if r.sharedEndpoint() {
			keys = append(keys, model.LoadBalancerImageComponents()...)
		}
	}
	if n.HasRole(model.RoleWorker) {
		keys = append(keys, model.ImageKubelet, model.ImageKubeProxy)
	}
	set := map[string]bool{}
	for _, k := range keys {
		set[r.images[k]] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// loadArchive streams the images of refs that the image archive name,
// inside the image directory dir (see openImageArchive), holds into d's
// docker load: only those (archiveSubset), so that a worker does not
// receive the control plane's images; the whole archive when it has no
// index to pick from. An archive holding none of refs loads nothing.
func loadArchive(ctx context.Context, d *runtime.Docker, dir, name string, refs []string) error {
	f, err := openImageArchive(dir, name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("image archive %s: %w", name, err)
	}
	write, found, err := archiveSubset(f, st.Size(), refs)
	switch {
	case errors.Is(err, errNotSubsettable):
		if _, err := d.Load(ctx, f); err != nil {
			return fmt.Errorf("docker load %s: %w", name, err)
		}
		return nil
	case err != nil:
		return workflow.UserFixable(fmt.Errorf("imageArchive %s: %w", name, err))
	case len(found) == 0:
		return nil
	}
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		err := write(pw)
		pw.CloseWithError(err)
		wrote <- err
	}()
	_, err = d.Load(ctx, pr)
	pr.CloseWithError(errors.New("docker load ended")) // unblocks the writer if Load stopped reading
	if werr := <-wrote; err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("docker load %s (%s): %w", name, strings.Join(found, ", "), err)
	}
	return nil
}

// ensureDockerImages makes refs present in n's Docker: those missing are
// loaded from the image archive (once, when one is configured), and what
// is still missing is pulled with the private registry's credentials.
func (r *run) ensureDockerImages(ctx context.Context, rep *workflow.Reporter, n node, d *runtime.Docker, refs []string) error {
	missing, err := missingImages(ctx, d, refs)
	if err != nil {
		return nodeErr(n, err, "")
	}
	on := waitOn{rep: rep, node: n.Name}
	defer on.done()
	if len(missing) > 0 && r.cfg.ImageArchive != "" {
		rep.Report(n.Name, "loading "+r.cfg.ImageArchive)
		on.waiting("docker load of "+r.cfg.ImageArchive, nil)
		if err := loadArchive(ctx, d, r.in.imageDir, r.cfg.ImageArchive, missing); err != nil {
			return nodeErr(n, err, "")
		}
		if missing, err = missingImages(ctx, d, missing); err != nil {
			return nodeErr(n, err, "")
		}
	}
	for _, ref := range missing {
		rep.Report(n.Name, "pulling "+ref)
		on.waiting("pull of "+ref, nil)
		if err := d.Pull(ctx, ref, r.registryAuth(ref)); err != nil {
			return workflow.UserFixable(nodeErr(n, fmt.Errorf("image %s is not on the node and could not be pulled: %w", ref, err),
				"push it to a registry the node can reach, or set imageArchive to a docker save archive that holds it"))
		}
	}
	return nil
}

// missingImages returns the refs that d does not have.
func missingImages(ctx context.Context, d *runtime.Docker, refs []string) ([]string, error) {
	var out []string
	for _, ref := range refs {
		ok, err := d.ImagePresent(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("look up image %s: %w", ref, err)
		}
		if !ok {
			out = append(out, ref)
		}
	}
	return out, nil
}

// registryAuth returns the credentials of the private registry ref comes
// from, if one is configured.
func (r *run) registryAuth(ref string) runtime.RegistryAuth {
	host := ""
	if i := strings.IndexByte(ref, '/'); i > 0 && strings.ContainsAny(ref[:i], ".:") {
		host = ref[:i]
	}
	for _, reg := range r.cfg.PrivateRegistries {
		u := strings.TrimPrefix(strings.TrimPrefix(reg.URL, "https://"), "http://")
		u = strings.TrimSuffix(u, "/")
		if host != "" && u == host {
			return runtime.RegistryAuth{Server: u, User: reg.User, Password: reg.Password}
		}
	}
	return runtime.RegistryAuth{}
}
