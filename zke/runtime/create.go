package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// createBody is the body of POST /containers/create (API 1.41).
type createBody struct {
	Image      string
	Entrypoint []string          `json:",omitempty"`
	Cmd        []string          `json:",omitempty"`
	Env        []string          `json:",omitempty"`
	Labels     map[string]string `json:",omitempty"`
	User       string            `json:",omitempty"`
	WorkingDir string            `json:",omitempty"`
	HostConfig hostConfig
}

type hostConfig struct {
	Binds             []string          `json:",omitempty"`
	Mounts            []apiMount        `json:",omitempty"`
	NetworkMode       string            `json:",omitempty"`
	PidMode           string            `json:",omitempty"`
	IpcMode           string            `json:",omitempty"`
	Privileged        bool              `json:",omitempty"`
	CapAdd            []string          `json:",omitempty"`
	CapDrop           []string          `json:",omitempty"`
	SecurityOpt       []string          `json:",omitempty"`
	DeviceCgroupRules []string          `json:",omitempty"`
	Devices           []apiDevice       `json:",omitempty"`
	RestartPolicy     apiRestartPolicy  `json:",omitzero"`
	Tmpfs             map[string]string `json:",omitempty"`
	CgroupnsMode      string            `json:",omitempty"`
	UsernsMode        string            `json:",omitempty"`
	// MaskedPaths and ReadonlyPaths, set to empty lists, unmask /proc and
	// /sys (nil keeps Docker's defaults).
	MaskedPaths   *[]string `json:",omitempty"`
	ReadonlyPaths *[]string `json:",omitempty"`
}

// securityOptSystemPaths is the docker CLI's --security-opt that the daemon
// does not know: the CLI turns it into empty MaskedPaths and ReadonlyPaths,
// and so does createRequest.
const securityOptSystemPaths = "systempaths=unconfined"

type apiMount struct {
	Type        string
	Source      string `json:",omitempty"`
	Target      string
	ReadOnly    bool            `json:",omitempty"`
	BindOptions *apiBindOptions `json:",omitempty"`
}

type apiBindOptions struct{ Propagation string }

type apiDevice struct{ PathOnHost, PathInContainer, CgroupPermissions string }

type apiRestartPolicy struct {
	Name              string
	MaximumRetryCount int `json:",omitempty"`
}

// createRequest builds the create body of a normalized spec, with zke's
// labels (and LabelJob for jobs).
func createRequest(n ContainerSpec, hash string, job bool) createBody {
	labels := map[string]string{LabelManaged: "true", LabelCluster: n.Cluster, LabelSpecHash: hash}
	if job {
		labels[LabelJob] = "true"
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	b := createBody{
		Image: n.Image, Entrypoint: n.Entrypoint, Cmd: n.Cmd, Env: n.Env, Labels: labels,
		User: n.User, WorkingDir: n.WorkingDir,
		HostConfig: hostConfig{
			Binds: n.Binds, NetworkMode: n.NetworkMode, PidMode: n.PidMode, IpcMode: n.IpcMode,
			Privileged: n.Privileged, CapAdd: n.CapAdd, CapDrop: n.CapDrop,
			DeviceCgroupRules: n.DeviceCgroupRules, Tmpfs: n.Tmpfs,
			CgroupnsMode: n.CgroupnsMode, UsernsMode: n.UsernsMode,
		},
	}
	for _, opt := range n.SecurityOpt {
		if opt == securityOptSystemPaths {
			b.HostConfig.MaskedPaths, b.HostConfig.ReadonlyPaths = &[]string{}, &[]string{}
			continue
		}
		b.HostConfig.SecurityOpt = append(b.HostConfig.SecurityOpt, opt)
	}
	// normalized checked the policy.
	name, count, _ := restartPolicy(n.RestartPolicy)
	b.HostConfig.RestartPolicy = apiRestartPolicy{Name: name, MaximumRetryCount: count}
	for _, m := range n.Mounts {
		am := apiMount{Type: m.Type, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
		if m.Propagation != "" {
			am.BindOptions = &apiBindOptions{Propagation: m.Propagation}
		}
		b.HostConfig.Mounts = append(b.HostConfig.Mounts, am)
	}
	for _, d := range n.Devices {
		// normalized put every device in canonical form host:container:perms.
		parts := strings.SplitN(d, ":", 3)
		b.HostConfig.Devices = append(b.HostConfig.Devices, apiDevice{PathOnHost: parts[0], PathInContainer: parts[1], CgroupPermissions: parts[2]})
	}
	return b
}

// create creates the container of a normalized spec and returns its ID.
// A missing image is an *ImageMissingError.
//
// The end of ctx does not interrupt the request: dockerd finishes a create
// its client gave up on, and the container would appear after the run was
// cancelled, when a delete that followed had already looked (seen in CI).
// The request is bounded by the per-call timeout instead, and the end of
// ctx is returned once Docker has answered, so that the container, if
// made, exists before the caller's clean-up lists what is there.
func (c *Docker) create(ctx context.Context, n ContainerSpec, hash string, job bool) (string, error) {
	var out struct {
		ID       string `json:"Id"`
		Warnings []string
	}
	err := c.do(context.WithoutCancel(ctx), call{
		op: "create container " + n.Name, method: http.MethodPost, path: "/containers/create",
		query: url.Values{"name": {n.Name}}, jsonBody: createRequest(n, hash, job),
	}, &out)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound && strings.Contains(strings.ToLower(apiErr.Message), "image") {
			// The only 404 of create is "No such image": its text is
			// inspected once, here, where it enters.
			return "", &ImageMissingError{Image: n.Image, Node: c.node}
		}
		return "", err
	}
	for _, w := range out.Warnings {
		c.log.Warn("docker create warning", "container", n.Name, "warning", w)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("create container %s on %s: %w (the container was created: it is zke's to remove)", n.Name, c.node, err)
	}
	return out.ID, nil
}
