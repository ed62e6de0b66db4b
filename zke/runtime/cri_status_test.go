package runtime

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Recorded "config" entries of verbose Status answers, cut to what zke
// reads plus neighbours (field names as containerd marshals them).
const (
	// containerd 1.6.20 (Debian 12) with no config.toml.
	statusConfig16 = `{"containerd":{"snapshotter":"overlayfs","defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2","runtimePath":"","options":{},"privileged_without_host_devices":false,"baseRuntimeSpec":"","cniConfDir":"","cniMaxConfNum":0}},"noPivot":false},"cni":{"binDir":"/usr/lib/cni","confDir":"/etc/cni/net.d","maxConfNum":1,"confTemplate":"","ipPref":""},"enableSelinux":false,"sandboxImage":"registry.k8s.io/pause:3.6","containerdRootDir":"/var/lib/containerd"}`
	// containerd 1.7 with SystemdCgroup = true and its default CNI section.
	statusConfig17Systemd = `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2","options":{"BinaryName":"","SystemdCgroup":true}}}},"cni":{"binDir":"/opt/cni/bin","confDir":"/etc/cni/net.d","maxConfNum":1}}`
	// containerd 2.1 with its defaults, another conf_dir.
	statusConfig2x = `{"containerd":{"defaultRuntimeName":"runc","runtimes":{"runc":{"runtimeType":"io.containerd.runc.v2","options":{"SystemdCgroup":false}}}},"cni":{"binDir":"","binDirs":["/opt/cni/bin","/usr/local/lib/cni"],"confDir":"/var/lib/rancher/cni","maxConfNum":1,"setupSerially":false},"containerdRootDir":"/var/lib/containerd"}`
)

// statusResponse encodes a runtime.v1.StatusResponse with a status
// (skipped) and the info map entries.
func statusResponse(info map[string]string) []byte {
	cond := protowire.AppendTag(nil, 1, protowire.BytesType)
	cond = protowire.AppendString(cond, "RuntimeReady")
	status := protowire.AppendTag(nil, 1, protowire.BytesType)
	status = protowire.AppendBytes(status, cond)
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, status)
	for k, v := range info {
		e := protowire.AppendTag(nil, 1, protowire.BytesType)
		e = protowire.AppendString(e, k)
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, v)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, e)
	}
	return b
}

// runtimeConfigResponse encodes a RuntimeConfigResponse whose linux
// configuration has the driver enum, or leaves it out when driver < 0.
func runtimeConfigResponse(driver int) []byte {
	var linux []byte
	if driver >= 0 {
		linux = protowire.AppendTag(nil, 1, protowire.VarintType)
		linux = protowire.AppendVarint(linux, uint64(driver))
	}
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, linux)
}

func TestCRIStatusConfigDecode(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		want    CRIConfig
		wantErr bool
	}{
		{"containerd 1.6 defaults", statusConfig16, CRIConfig{CNIConfDir: "/etc/cni/net.d", CNIBinDirs: []string{"/usr/lib/cni"}, DefaultRuntime: "runc", RootDir: "/var/lib/containerd", SandboxImage: "registry.k8s.io/pause:3.6"}, false},
		{"containerd 1.7 systemd", statusConfig17Systemd, CRIConfig{CNIConfDir: "/etc/cni/net.d", CNIBinDirs: []string{"/opt/cni/bin"}, DefaultRuntime: "runc", SystemdCgroup: true}, false},
		{"containerd 2.x bin_dirs", statusConfig2x, CRIConfig{CNIConfDir: "/var/lib/rancher/cni", CNIBinDirs: []string{"/opt/cni/bin", "/usr/local/lib/cni"}, DefaultRuntime: "runc", RootDir: "/var/lib/containerd"}, false},
		{"no cni section", `{"containerd":{}}`, CRIConfig{}, true},
		{"no bin dir", `{"cni":{"confDir":"/etc/cni/net.d"}}`, CRIConfig{}, true},
		{"not JSON", `config`, CRIConfig{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := parseStatusInfo(statusResponse(map[string]string{"config": tc.config, "golang": `"go1.24"`}))
			if err != nil || info["config"] != tc.config {
				t.Fatalf("info map: %q, %v", info, err)
			}
			got, err := parseCRIPluginConfig([]byte(tc.config))
			if (err != nil) != tc.wantErr || got.CNIConfDir != tc.want.CNIConfDir || !slices.Equal(got.CNIBinDirs, tc.want.CNIBinDirs) ||
				got.DefaultRuntime != tc.want.DefaultRuntime || got.SystemdCgroup != tc.want.SystemdCgroup || got.RootDir != tc.want.RootDir || got.SandboxImage != tc.want.SandboxImage {
				t.Errorf("got %+v, %v; want %+v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if _, err := parseStatusInfo(statusResponse(map[string]string{"config": "x"})[:10]); err == nil {
		t.Error("a truncated StatusResponse decoded")
	}
}

func TestCRICgroupDriverDecode(t *testing.T) {
	tests := []struct {
		name    string
		msg     []byte
		want    string
		wantErr bool
	}{
		{"cgroupfs", runtimeConfigResponse(1), CgroupDriverCgroupfs, false},
		{"systemd explicit", runtimeConfigResponse(0), CgroupDriverSystemd, false},
		{"systemd as proto3 default", runtimeConfigResponse(-1), CgroupDriverSystemd, false},
		{"no linux configuration", nil, "", true},
		{"unknown driver", runtimeConfigResponse(7), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRuntimeConfigResponse(tc.msg)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// grpcAnswer is a handler answering every call on path with msg and
// every other call Unimplemented, as a runtime without that method does.
func grpcAnswer(t *testing.T, path string, wantReq, msg []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		if r.URL.Path != path {
			w.Header().Set("Grpc-Status", "12")
			return
		}
		if string(body) != string(grpcFrame(wantReq)) {
			t.Errorf("request to %s: %x, want %x", path, body, grpcFrame(wantReq))
		}
		w.Header().Set("Trailer", "Grpc-Status")
		_, _ = w.Write(grpcFrame(msg))
		w.Header().Set("Grpc-Status", "0")
	}
}

func TestCRIStatusCalls(t *testing.T) {
	verbose := []byte{0x08, 0x01}
	ctx := context.Background()
	t.Run("status of containerd 2.x", func(t *testing.T) {
		sock := h2cServer(t, grpcAnswer(t, criStatusPath, verbose, statusResponse(map[string]string{"config": statusConfig2x})))
		cfg, err := CRIStatusConfig(ctx, &net.Dialer{}, sock, time.Second)
		if err != nil || cfg.CNIConfDir != "/var/lib/rancher/cni" || len(cfg.CNIBinDirs) != 2 {
			t.Fatalf("got %+v, %v", cfg, err)
		}
		if _, err := CRICgroupDriver(ctx, &net.Dialer{}, sock, time.Second); !errors.Is(err, ErrCRIUnimplemented) {
			t.Fatalf("RuntimeConfig on a runtime without it: %v, want ErrCRIUnimplemented", err)
		}
	})
	t.Run("status without config", func(t *testing.T) {
		sock := h2cServer(t, grpcAnswer(t, criStatusPath, verbose, statusResponse(map[string]string{"golang": "x"})))
		if _, err := CRIStatusConfig(ctx, &net.Dialer{}, sock, time.Second); !errors.Is(err, ErrCRINoConfig) {
			t.Fatalf("got %v, want ErrCRINoConfig", err)
		}
	})
	t.Run("runtime config", func(t *testing.T) {
		sock := h2cServer(t, grpcAnswer(t, criRuntimeConfigPath, nil, runtimeConfigResponse(1)))
		if d, err := CRICgroupDriver(ctx, &net.Dialer{}, sock, time.Second); err != nil || d != CgroupDriverCgroupfs {
			t.Fatalf("got %q, %v", d, err)
		}
		var ce *CRIError
		if _, err := CRIStatusConfig(ctx, &net.Dialer{}, sock, time.Second); !errors.As(err, &ce) || ce.Call != criStatusPath || !errors.Is(err, ErrCRIUnimplemented) {
			t.Fatalf("Status on a runtime without it: %v", err)
		}
	})
	t.Run("too slow", func(t *testing.T) {
		sock := h2cServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		start := time.Now()
		if _, err := CRIStatusConfig(ctx, &net.Dialer{}, sock, 200*time.Millisecond); !errors.Is(err, ErrCRIUnreachable) {
			t.Fatalf("got %v, want ErrCRIUnreachable", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("the bounded call took %s", d)
		}
	})
}
