package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The CRI calls that tell where a runtime looks for CNI configs and
// plugins and how it drives cgroups.
const (
	criStatusPath        = "/runtime.v1.RuntimeService/Status"
	criRuntimeConfigPath = "/runtime.v1.RuntimeService/RuntimeConfig"
)

// criMaxStatus bounds a verbose StatusResponse: containerd puts the JSON
// of its whole CRI plugin config and of its loaded CNI networks in it
// (a few to some tens of KiB).
const criMaxStatus = 4 << 20

// Cgroup drivers, as the kubelet's cgroupDriver spells them.
const (
	CgroupDriverSystemd  = "systemd"
	CgroupDriverCgroupfs = "cgroupfs"
)

// ErrCRINoConfig: the runtime answered the verbose Status call without
// a CRI plugin config zke can read (a runtime other than containerd).
var ErrCRINoConfig = errors.New("the runtime's status carries no containerd CRI config")

// CRIConfig is what containerd's CRI plugin says about its config in a
// verbose Status answer.
type CRIConfig struct {
	// CNIConfDir is the directory it reads CNI network configs from.
	CNIConfDir string
	// CNIBinDirs are the directories it looks for CNI plugins in, in
	// order (containerd 1.x has one, bin_dir; 2.x a list, bin_dirs).
	CNIBinDirs []string
	// DefaultRuntime is the runtime handler pods run with by default
	// (containerd.default_runtime_name).
	DefaultRuntime string
	// SystemdCgroup is the default runtime's runc option SystemdCgroup
	// (false when unset, as runc's shim reads it).
	SystemdCgroup bool
	// RootDir is containerd's root directory (/var/lib/containerd by
	// default), where its snapshotter keeps the images: the kubelet
	// reads the file system's usage there (its image file system).
	RootDir string
	// SandboxImage is the pod sandbox image containerd 1.x runs every pod
	// in (sandbox_image); "" from containerd 2, whose status does not
	// report it.
	SandboxImage string
}

// CRIStatusConfig makes the CRI Status call with verbose set on the
// runtime at socket (through d, as CRIVersion) and decodes containerd's
// CRI plugin config from the answer's "config" entry. A failed call is a
// *CRIError; an answer without a readable config is ErrCRINoConfig. It
// blocks until the answer, ctx's end or timeout, whichever is first.
func CRIStatusConfig(ctx context.Context, d Dialer, socket string, timeout time.Duration) (CRIConfig, error) {
	req := protowire.AppendTag(nil, 1, protowire.VarintType)
	req = protowire.AppendVarint(req, 1) // verbose: true
	msg, err := criUnary(ctx, d, socket, criStatusPath, req, criMaxStatus, timeout)
	if err != nil {
		return CRIConfig{}, err
	}
	info, err := parseStatusInfo(msg)
	if err != nil {
		return CRIConfig{}, &CRIError{Socket: socket, Call: criStatusPath, Kind: ErrCRIUnreachable, Err: err}
	}
	raw, ok := info["config"]
	if !ok {
		return CRIConfig{}, fmt.Errorf("CRI status on %s: %w (no \"config\" entry)", socket, ErrCRINoConfig)
	}
	cfg, err := parseCRIPluginConfig([]byte(raw))
	if err != nil {
		return CRIConfig{}, fmt.Errorf("CRI status on %s: %w: %w", socket, ErrCRINoConfig, err)
	}
	return cfg, nil
}

// CRICgroupDriver makes the CRI RuntimeConfig call on the runtime at
// socket and returns the cgroup driver it answers (CgroupDriverSystemd or
// CgroupDriverCgroupfs). containerd 2.x answers it; 1.x does not know
// the call, which is a *CRIError matching ErrCRIUnimplemented. It blocks
// until the answer, ctx's end or timeout, whichever is first.
func CRICgroupDriver(ctx context.Context, d Dialer, socket string, timeout time.Duration) (string, error) {
	msg, err := criUnary(ctx, d, socket, criRuntimeConfigPath, nil, criMaxMessage, timeout)
	if err != nil {
		return "", err
	}
	driver, err := parseRuntimeConfigResponse(msg)
	if err != nil {
		return "", &CRIError{Socket: socket, Call: criRuntimeConfigPath, Kind: ErrCRIUnreachable, Err: err}
	}
	return driver, nil
}

// criPluginConfig is the part of containerd's CRI plugin config (the JSON
// of its criconfig.Config, the same field names in 1.6, 1.7 and 2.x) zke
// reads.
type criPluginConfig struct {
	ContainerdRootDir string `json:"containerdRootDir"`
	SandboxImage      string `json:"sandboxImage"`
	Containerd        struct {
		DefaultRuntimeName string `json:"defaultRuntimeName"`
		Runtimes           map[string]struct {
			Options map[string]any `json:"options"`
		} `json:"runtimes"`
	} `json:"containerd"`
	CNI *struct {
		BinDir  string   `json:"binDir"`
		BinDirs []string `json:"binDirs"`
		ConfDir string   `json:"confDir"`
	} `json:"cni"`
}

// parseCRIPluginConfig decodes the JSON of containerd's CRI plugin
// config. containerd 2.x moves a configured bin_dir into bin_dirs; a
// config that still has both (or 1.x, only bin_dir) searches bin_dirs
// first, as 2.x would refuse the mix.
func parseCRIPluginConfig(b []byte) (CRIConfig, error) {
	var pc criPluginConfig
	if err := json.Unmarshal(b, &pc); err != nil {
		return CRIConfig{}, fmt.Errorf("decode the CRI plugin config: %w", err)
	}
	if pc.CNI == nil || pc.CNI.ConfDir == "" {
		return CRIConfig{}, errors.New("the CRI plugin config has no cni.confDir")
	}
	cfg := CRIConfig{CNIConfDir: pc.CNI.ConfDir, DefaultRuntime: pc.Containerd.DefaultRuntimeName, RootDir: pc.ContainerdRootDir, SandboxImage: pc.SandboxImage}
	for _, d := range append(append([]string(nil), pc.CNI.BinDirs...), pc.CNI.BinDir) {
		if d != "" {
			cfg.CNIBinDirs = append(cfg.CNIBinDirs, d)
		}
	}
	if len(cfg.CNIBinDirs) == 0 {
		return CRIConfig{}, errors.New("the CRI plugin config has neither cni.binDir nor cni.binDirs")
	}
	if rt, ok := pc.Containerd.Runtimes[cfg.DefaultRuntime]; ok {
		v, _ := rt.Options["SystemdCgroup"].(bool)
		cfg.SystemdCgroup = v
	}
	return cfg, nil
}

// parseStatusInfo decodes the info map (field 2, map<string, string>) of
// a runtime.v1.StatusResponse; other fields are skipped.
func parseStatusInfo(b []byte) (map[string]string, error) {
	info := map[string]string{}
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 2 || typ != protowire.BytesType {
			return nil
		}
		var key, val string
		err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case typ != protowire.BytesType:
			case num == 1:
				key = string(v)
			case num == 2:
				val = string(v)
			}
			return nil
		})
		info[key] = val
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("decode StatusResponse: %w", err)
	}
	return info, nil
}

// parseRuntimeConfigResponse decodes runtime.v1.RuntimeConfigResponse:
// field 1 is LinuxRuntimeConfiguration, whose field 1 is the CgroupDriver
// enum (SYSTEMD = 0, CGROUPFS = 1; proto3 leaves the zero value out, so
// a linux message without the field says systemd).
func parseRuntimeConfigResponse(b []byte) (string, error) {
	driver := ""
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		driver = CgroupDriverSystemd
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if num != 1 || typ != protowire.VarintType {
				return nil
			}
			switch e, _ := protowire.ConsumeVarint(v); e {
			case 0:
				driver = CgroupDriverSystemd
			case 1:
				driver = CgroupDriverCgroupfs
			default:
				return fmt.Errorf("unknown cgroup driver %d", e)
			}
			return nil
		})
	})
	if err != nil {
		return "", fmt.Errorf("decode RuntimeConfigResponse: %w", err)
	}
	if driver == "" {
		return "", errors.New("RuntimeConfigResponse has no linux configuration")
	}
	return driver, nil
}

// eachField calls fn with every field of the protobuf message b: its
// number, wire type and raw value (the payload of a length-delimited
// field, the encoded varint or fixed bytes otherwise).
func eachField(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		v := b[:n]
		if typ == protowire.BytesType {
			var m int
			v, m = protowire.ConsumeBytes(v)
			if m < 0 {
				return protowire.ParseError(m)
			}
		}
		if err := fn(num, typ, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
