package runtime

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The labels that mark a container as zke's. Users' labels may not use the
// io.zke. prefix.
const (
	LabelManaged  = "io.zke.managed"
	LabelCluster  = "io.zke.cluster"
	LabelSpecHash = "io.zke.spec-hash"
	// LabelJob marks the one-shot containers of RunJob.
	LabelJob = "io.zke.job"
	// labelPrefix is reserved for the labels above.
	labelPrefix = "io.zke."
)

// Restart policies.
const (
	// RestartUnlessStopped is the default of Ensure: a component comes
	// back after a crash and after a reboot of the node, but not after an
	// operator's docker stop.
	RestartUnlessStopped = "unless-stopped"
	// RestartNo is the policy of every RunJob container.
	RestartNo = "no"
)

// ContainerSpec is everything zke sets on a container. Its canonical JSON
// form (see Hash) decides whether a running container is up to date, so
// fields carry omitempty: a field added later leaves the hashes of
// existing specs unchanged.
type ContainerSpec struct {
	// Name is the container's name (required by Ensure; RunJob generates
	// one when empty).
	Name string `json:"name,omitempty"`
	// Cluster is the io.zke.cluster label; empty takes Options.Cluster.
	Cluster string `json:"cluster,omitempty"`
	// Image is the image reference; it must be present on the node.
	Image string `json:"image"`
	// Entrypoint and Cmd override the image's; nil keeps the image's.
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
	// Env holds "KEY=value" entries, each key once.
	Env []string `json:"env,omitempty"`
	// Labels are extra labels; keys may not start with io.zke.
	Labels map[string]string `json:"labels,omitempty"`
	// Binds are "source:target[:ro|rw][,rshared|rslave...]" (see
	// ParseBind). Missing source directories are created by Docker.
	Binds []string `json:"binds,omitempty"`
	// Mounts are mounts with explicit types (bind sources must exist).
	Mounts []Mount `json:"mounts,omitempty"`
	// NetworkMode, PidMode and IpcMode: "host" shares the node's
	// namespace; empty is Docker's default.
	NetworkMode string `json:"networkMode,omitempty"`
	PidMode     string `json:"pidMode,omitempty"`
	IpcMode     string `json:"ipcMode,omitempty"`
	// Privileged is docker run --privileged. It fails on nodes whose
	// capability bounding set lacks a capability; see WithAllPrivileges.
	Privileged bool `json:"privileged,omitempty"`
	// CapAdd and CapDrop add and drop capabilities ("ALL", "SYS_ADMIN";
	// a CAP_ prefix is accepted and removed).
	CapAdd  []string `json:"capAdd,omitempty"`
	CapDrop []string `json:"capDrop,omitempty"`
	// SecurityOpt are Docker security options ("seccomp=unconfined").
	SecurityOpt []string `json:"securityOpt,omitempty"`
	// DeviceCgroupRules are device cgroup rules ("a *:* rwm").
	DeviceCgroupRules []string `json:"deviceCgroupRules,omitempty"`
	// Devices are "host[:container[:rwm]]" (see ParseDevice).
	Devices []string `json:"devices,omitempty"`
	// RestartPolicy is "no", "always", "unless-stopped" or
	// "on-failure[:N]"; Ensure defaults it to "unless-stopped".
	RestartPolicy string `json:"restartPolicy,omitempty"`
	// User and WorkingDir override the image's.
	User       string `json:"user,omitempty"`
	WorkingDir string `json:"workingDir,omitempty"`
	// Tmpfs maps a container path to tmpfs mount options ("size=64m").
	Tmpfs map[string]string `json:"tmpfs,omitempty"`
	// CgroupnsMode is "", "host" or "private"; UsernsMode "" or "host".
	CgroupnsMode string `json:"cgroupnsMode,omitempty"`
	UsernsMode   string `json:"usernsMode,omitempty"`
}

// Mount is a mount with an explicit type.
type Mount struct {
	// Type is "bind" (default), "volume" or "tmpfs".
	Type string `json:"type,omitempty"`
	// Source is the node path of a bind (which must exist) or the volume
	// name; empty for tmpfs.
	Source string `json:"source,omitempty"`
	// Target is the absolute path in the container.
	Target string `json:"target"`
	// ReadOnly mounts it read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// Propagation is a bind's propagation mode (see Bind.Propagation).
	Propagation string `json:"propagation,omitempty"`
}

// validName applies Docker's rule for container names:
// [a-zA-Z0-9][a-zA-Z0-9_.-]*.
func validName(name string) bool {
	for i, r := range name {
		alnum := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || r != '_' && r != '.' && r != '-') {
			return false
		}
	}
	return name != ""
}

// normalized validates s and returns its canonical copy: defaults filled
// (cluster, restart policy), binds and devices in canonical form, set-like
// lists sorted, capabilities upper-case without CAP_. It never modifies s.
// Errors match ErrInvalidSpec and name the field.
func (s ContainerSpec) normalized(cluster, restart string) (ContainerSpec, error) {
	n := s
	bad := func(format string, args ...any) (ContainerSpec, error) {
		return ContainerSpec{}, fmt.Errorf("%w: container %s: %s", ErrInvalidSpec, s.Name, fmt.Sprintf(format, args...))
	}
	if !validName(n.Name) {
		return bad("name %q: use letters, digits, _ . - (starting with a letter or digit)", n.Name)
	}
	if n.Cluster == "" {
		n.Cluster = cluster
	}
	if n.Cluster == "" {
		return bad("no cluster: set Options.Cluster or ContainerSpec.Cluster")
	}
	if err := validLabelValue("cluster", n.Cluster); err != nil {
		return ContainerSpec{}, fmt.Errorf("container %s: %w", s.Name, err)
	}
	if n.Image == "" || strings.ContainsAny(n.Image, " \t\n") {
		return bad("image %q: want a reference such as registry/name:tag", n.Image)
	}
	if n.RestartPolicy == "" {
		n.RestartPolicy = restart
	}
	if _, _, err := restartPolicy(n.RestartPolicy); err != nil {
		return bad("%v", err)
	}
	keys := map[string]bool{}
	for _, e := range n.Env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return bad("env %q: want KEY=value", e)
		}
		if keys[k] {
			return bad("env %s given twice", k)
		}
		keys[k] = true
	}
	for k, v := range n.Labels {
		if k == "" || strings.HasPrefix(k, labelPrefix) {
			return bad("label %q: keys must be non-empty and not start with %s", k, labelPrefix)
		}
		if err := validLabelValue("label "+k, v); err != nil {
			return ContainerSpec{}, fmt.Errorf("container %s: %w", s.Name, err)
		}
	}
	targets := map[string]bool{}
	target := func(t string) error {
		if targets[t] {
			return fmt.Errorf("%w: container %s: two mounts on %s", ErrInvalidSpec, s.Name, t)
		}
		targets[t] = true
		return nil
	}
	n.Binds = nil
	for _, b := range s.Binds {
		pb, err := ParseBind(b)
		if err != nil {
			return ContainerSpec{}, fmt.Errorf("container %s: %w", s.Name, err)
		}
		if err := target(pb.Target); err != nil {
			return ContainerSpec{}, err
		}
		n.Binds = append(n.Binds, pb.String())
	}
	n.Mounts = nil
	for _, m := range s.Mounts {
		cm, err := m.normalized()
		if err != nil {
			return ContainerSpec{}, fmt.Errorf("container %s: %w", s.Name, err)
		}
		if err := target(cm.Target); err != nil {
			return ContainerSpec{}, err
		}
		n.Mounts = append(n.Mounts, cm)
	}
	for t := range n.Tmpfs {
		if !path.IsAbs(t) {
			return bad("tmpfs %q: want an absolute path", t)
		}
		if err := target(path.Clean(t)); err != nil {
			return ContainerSpec{}, err
		}
	}
	n.Devices = nil
	for _, d := range s.Devices {
		pd, err := ParseDevice(d)
		if err != nil {
			return ContainerSpec{}, fmt.Errorf("container %s: %w", s.Name, err)
		}
		n.Devices = append(n.Devices, pd.String())
	}
	switch n.CgroupnsMode {
	case "", "host", "private":
	default:
		return bad("cgroupnsMode %q: want host or private", n.CgroupnsMode)
	}
	switch n.UsernsMode {
	case "", "host":
	default:
		return bad("usernsMode %q: want host", n.UsernsMode)
	}
	n.CapAdd = canonicalCaps(n.CapAdd)
	n.CapDrop = canonicalCaps(n.CapDrop)
	n.Env = sortedCopy(n.Env)
	n.Binds = sortedCopy(n.Binds)
	n.Devices = sortedCopy(n.Devices)
	n.SecurityOpt = sortedCopy(n.SecurityOpt)
	n.DeviceCgroupRules = sortedCopy(n.DeviceCgroupRules)
	slices.SortFunc(n.Mounts, func(a, b Mount) int { return strings.Compare(a.Target, b.Target) })
	n.Labels = maps.Clone(n.Labels)
	n.Tmpfs = maps.Clone(n.Tmpfs)
	n.Entrypoint = slices.Clone(n.Entrypoint)
	n.Cmd = slices.Clone(n.Cmd)
	return n, nil
}

// normalized validates m and fills its default type.
func (m Mount) normalized() (Mount, error) {
	if m.Type == "" {
		m.Type = "bind"
	}
	if !path.IsAbs(m.Target) {
		return Mount{}, fmt.Errorf("%w: mount target %q: want an absolute path", ErrInvalidSpec, m.Target)
	}
	m.Target = path.Clean(m.Target)
	switch m.Type {
	case "bind":
		if !path.IsAbs(m.Source) {
			return Mount{}, fmt.Errorf("%w: bind mount on %s: source %q must be an absolute path", ErrInvalidSpec, m.Target, m.Source)
		}
		m.Source = path.Clean(m.Source)
		if m.Propagation != "" && !isPropagation(m.Propagation) {
			return Mount{}, fmt.Errorf("%w: bind mount on %s: unknown propagation %q", ErrInvalidSpec, m.Target, m.Propagation)
		}
	case "volume", "tmpfs":
		if m.Propagation != "" {
			return Mount{}, fmt.Errorf("%w: %s mount on %s: propagation applies to binds only", ErrInvalidSpec, m.Type, m.Target)
		}
		if m.Type == "tmpfs" && m.Source != "" {
			return Mount{}, fmt.Errorf("%w: tmpfs mount on %s has a source", ErrInvalidSpec, m.Target)
		}
	default:
		return Mount{}, fmt.Errorf("%w: mount on %s: type %q (want bind, volume or tmpfs)", ErrInvalidSpec, m.Target, m.Type)
	}
	return m, nil
}

// restartPolicy splits "on-failure:N" into Docker's name and count.
func restartPolicy(p string) (string, int, error) {
	name, count, hasCount := strings.Cut(p, ":")
	switch name {
	case "no", "always", "unless-stopped":
		if !hasCount {
			return name, 0, nil
		}
	case "on-failure":
		if !hasCount {
			return name, 0, nil
		}
		n, err := strconv.Atoi(count)
		if err == nil && n >= 0 {
			return name, n, nil
		}
	}
	return "", 0, fmt.Errorf("restart policy %q: want no, always, unless-stopped or on-failure[:N]", p)
}

// validLabelValue rejects values Docker's label filters cannot match
// reliably (a filter is "key=value").
func validLabelValue(what, v string) error {
	if strings.ContainsAny(v, "\n\r\x00") {
		return fmt.Errorf("%w: %s %q contains a line break or NUL", ErrInvalidSpec, what, v)
	}
	return nil
}

// canonicalCaps upper-cases capability names, strips CAP_, sorts and
// removes duplicates.
func canonicalCaps(caps []string) []string {
	if len(caps) == 0 {
		return nil
	}
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		out = append(out, strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_"))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sortedCopy returns s sorted, without duplicates.
func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
