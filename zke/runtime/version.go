package runtime

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The API versions this client speaks: 1.41 is Docker 20.10, the oldest
// engine zke supports; 1.47 (Docker 27) is the newest whose API this
// package was checked against. Newer daemons still accept 1.47 (Docker 29
// raised its minimum to 1.44).
const (
	apiMajor    = 1
	apiMinMinor = 41
	apiMaxMinor = 47
)

// Info describes a node's Docker daemon.
type Info struct {
	// Version is the engine version ("20.10.24").
	Version string
	// APIVersion is the API version negotiated for every call ("1.41").
	APIVersion string
	// OS and Arch are the daemon's platform ("linux", "amd64").
	OS, Arch string
	// CgroupVersion is "1" or "2"; CgroupDriver "cgroupfs" or "systemd".
	CgroupVersion, CgroupDriver string
	// DockerRootDir is the daemon's data root.
	DockerRootDir string
}

// Ping checks that the daemon answers, negotiates the API version and
// describes the daemon. It makes three calls, each bounded by the
// per-call timeout.
func (c *Docker) Ping(ctx context.Context) (Info, error) {
	if err := c.do(ctx, call{op: "ping", method: http.MethodGet, path: "/_ping", unversioned: true}, nil); err != nil {
		return Info{}, err
	}
	v, err := c.apiVersion(ctx, "ping")
	if err != nil {
		return Info{}, err
	}
	var ver struct{ Version, Os, Arch string }
	if err := c.do(ctx, call{op: "version", method: http.MethodGet, path: "/version"}, &ver); err != nil {
		return Info{}, err
	}
	var info struct{ CgroupVersion, CgroupDriver, DockerRootDir string }
	if err := c.do(ctx, call{op: "info", method: http.MethodGet, path: "/info"}, &info); err != nil {
		return Info{}, err
	}
	cgv := info.CgroupVersion
	if cgv == "" {
		cgv = "1" // older daemons report nothing on cgroup v1
	}
	return Info{
		Version: ver.Version, APIVersion: v.String(), OS: ver.Os, Arch: ver.Arch,
		CgroupVersion: cgv, CgroupDriver: info.CgroupDriver, DockerRootDir: info.DockerRootDir,
	}, nil
}

// apiVersion returns the negotiated version, negotiating it first if
// needed. Concurrent callers wait for one negotiation, each within its ctx;
// a failed negotiation is retried by the next call.
func (c *Docker) apiVersion(ctx context.Context, op string) (apiVersion, error) {
	c.mu.Lock()
	v := c.api
	c.mu.Unlock()
	if v != (apiVersion{}) {
		return v, nil
	}
	select {
	case c.negotiating <- struct{}{}:
	case <-ctx.Done():
		return apiVersion{}, c.connError(ctx, op, ctx.Err())
	}
	defer func() { <-c.negotiating }()
	c.mu.Lock()
	v = c.api
	c.mu.Unlock()
	if v != (apiVersion{}) {
		return v, nil
	}
	var ver struct {
		Version       string
		APIVersion    string `json:"ApiVersion"`
		MinAPIVersion string `json:"MinAPIVersion"`
	}
	if err := c.do(ctx, call{op: op, method: http.MethodGet, path: "/version", unversioned: true}, &ver); err != nil {
		return apiVersion{}, err
	}
	v, err := negotiate(ver.APIVersion, ver.MinAPIVersion)
	if err != nil {
		return apiVersion{}, fmt.Errorf("docker %s on %s: %w", ver.Version, c.node, err)
	}
	c.mu.Lock()
	c.api = v
	c.mu.Unlock()
	c.log.Debug("docker API version negotiated", "engine", ver.Version, "api", v.String())
	return v, nil
}

// negotiate picks the highest version both sides speak.
func negotiate(server, serverMin string) (apiVersion, error) {
	sv, err := parseAPIVersion(server)
	if err != nil {
		return apiVersion{}, fmt.Errorf("%w: daemon reports API version %q", ErrAPIVersion, server)
	}
	minAPI, maxAPI := apiVersion{apiMajor, apiMinMinor}, apiVersion{apiMajor, apiMaxMinor}
	v := sv
	if maxAPI.less(v) {
		v = maxAPI
	}
	if v.less(minAPI) {
		return apiVersion{}, fmt.Errorf("%w: the daemon speaks API %s, zke needs at least %s: upgrade Docker to 20.10 or later", ErrAPIVersion, sv, minAPI)
	}
	if serverMin != "" {
		mv, err := parseAPIVersion(serverMin)
		if err != nil {
			return apiVersion{}, fmt.Errorf("%w: daemon reports minimum API version %q", ErrAPIVersion, serverMin)
		}
		if v.less(mv) {
			return apiVersion{}, fmt.Errorf("%w: the daemon requires API %s or later, zke speaks at most %s: use an older Docker or a newer singlecloud", ErrAPIVersion, mv, maxAPI)
		}
	}
	return v, nil
}

// apiVersion is a Docker API version, major.minor.
type apiVersion struct{ major, minor int }

func (v apiVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v apiVersion) less(o apiVersion) bool {
	return v.major < o.major || v.major == o.major && v.minor < o.minor
}

func parseAPIVersion(s string) (apiVersion, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return apiVersion{}, fmt.Errorf("malformed API version %q", s)
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return apiVersion{}, fmt.Errorf("malformed API version %q", s)
	}
	return apiVersion{a, b}, nil
}
