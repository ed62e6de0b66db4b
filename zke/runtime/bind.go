package runtime

import (
	"fmt"
	"path"
	"strings"
)

// Bind is a host directory or file mounted into a container, in Docker's
// "source:target[:options]" form (options: ro or rw, a propagation mode,
// z or Z). zke's components need rshared binds for directories in which
// the kubelet mounts volumes.
type Bind struct {
	// Source is the absolute path on the node; Target the absolute path in
	// the container.
	Source, Target string
	// ReadOnly mounts it read-only (":ro").
	ReadOnly bool
	// Propagation is "", "private", "rprivate", "shared", "rshared",
	// "slave" or "rslave". Shared modes need the source to be on a shared
	// mount on the node.
	Propagation string
	// SELinux is "", "z" (shared label) or "Z" (private label).
	SELinux string
}

// isPropagation reports whether p is a bind propagation mode Docker
// accepts.
func isPropagation(p string) bool {
	switch p {
	case "private", "rprivate", "shared", "rshared", "slave", "rslave":
		return true
	}
	return false
}

// ParseBind parses "source:target[:opt[,opt]...]". Both paths must be
// absolute; options are ro|rw, one propagation mode and z|Z, each at most
// once. Errors match ErrInvalidSpec and quote the bind.
func ParseBind(s string) (Bind, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return Bind{}, fmt.Errorf("%w: bind %q: want source:target[:options]", ErrInvalidSpec, s)
	}
	b := Bind{Source: parts[0], Target: parts[1]}
	if !path.IsAbs(b.Source) || !path.IsAbs(b.Target) {
		return Bind{}, fmt.Errorf("%w: bind %q: source and target must be absolute paths", ErrInvalidSpec, s)
	}
	b.Source, b.Target = path.Clean(b.Source), path.Clean(b.Target)
	if len(parts) == 3 {
		var mode bool
		for _, opt := range strings.Split(parts[2], ",") {
			switch {
			case opt == "ro" || opt == "rw":
				if mode {
					return Bind{}, fmt.Errorf("%w: bind %q: ro/rw given twice", ErrInvalidSpec, s)
				}
				mode, b.ReadOnly = true, opt == "ro"
			case isPropagation(opt):
				if b.Propagation != "" {
					return Bind{}, fmt.Errorf("%w: bind %q: two propagation modes", ErrInvalidSpec, s)
				}
				b.Propagation = opt
			case opt == "z" || opt == "Z":
				if b.SELinux != "" {
					return Bind{}, fmt.Errorf("%w: bind %q: z/Z given twice", ErrInvalidSpec, s)
				}
				b.SELinux = opt
			default:
				return Bind{}, fmt.Errorf("%w: bind %q: unknown option %q (want ro, rw, rshared, rslave, ...)", ErrInvalidSpec, s, opt)
			}
		}
	}
	return b, nil
}

// String is the canonical form: "source:target" plus the options that are
// not defaults, in the order ro, propagation, SELinux label.
func (b Bind) String() string {
	var opts []string
	if b.ReadOnly {
		opts = append(opts, "ro")
	}
	if b.Propagation != "" {
		opts = append(opts, b.Propagation)
	}
	if b.SELinux != "" {
		opts = append(opts, b.SELinux)
	}
	s := b.Source + ":" + b.Target
	if len(opts) > 0 {
		s += ":" + strings.Join(opts, ",")
	}
	return s
}

// Device is a host device made available in a container, in Docker's
// "host[:container[:permissions]]" form.
type Device struct {
	// PathOnHost and PathInContainer are absolute device paths.
	PathOnHost, PathInContainer string
	// Permissions is a non-empty subset of "rwm".
	Permissions string
}

// ParseDevice parses "host[:container[:perms]]"; the container path
// defaults to the host path and the permissions to "rwm". Errors match
// ErrInvalidSpec.
func ParseDevice(s string) (Device, error) {
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return Device{}, fmt.Errorf("%w: device %q: want host[:container[:rwm]]", ErrInvalidSpec, s)
	}
	d := Device{PathOnHost: parts[0], PathInContainer: parts[0], Permissions: "rwm"}
	if len(parts) > 1 && parts[1] != "" {
		d.PathInContainer = parts[1]
	}
	if len(parts) > 2 {
		d.Permissions = parts[2]
	}
	if !path.IsAbs(d.PathOnHost) || !path.IsAbs(d.PathInContainer) {
		return Device{}, fmt.Errorf("%w: device %q: paths must be absolute", ErrInvalidSpec, s)
	}
	if d.Permissions == "" || strings.Trim(d.Permissions, "rwm") != "" {
		return Device{}, fmt.Errorf("%w: device %q: permissions must be a subset of rwm", ErrInvalidSpec, s)
	}
	return d, nil
}

// String is the canonical form "host:container:perms".
func (d Device) String() string {
	return d.PathOnHost + ":" + d.PathInContainer + ":" + d.Permissions
}
