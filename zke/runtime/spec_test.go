package runtime

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// kubeletSpec is a spec shaped like RKE's kubelet container.
func kubeletSpec() ContainerSpec {
	return ContainerSpec{
		Name:        "kubelet",
		Image:       "singlecloud.test/kubernetes:v1.36.3",
		Entrypoint:  []string{"kubelet"},
		Cmd:         []string{"--config=/etc/kubernetes/kubelet.yaml", "--v=2"},
		Env:         []string{"B=2", "A=1"},
		Labels:      map[string]string{"role": "worker", "app": "kubelet"},
		Binds:       []string{"/var/lib/kubelet:/var/lib/kubelet:rshared", "/etc/kubernetes:/etc/kubernetes:ro"},
		NetworkMode: "host", PidMode: "host",
		CapAdd:      []string{"all"},
		CapDrop:     []string{"CAP_SYS_RESOURCE"},
		SecurityOpt: []string{"seccomp=unconfined", "apparmor=unconfined"},
	}
}

func mustHash(t *testing.T, s ContainerSpec) string {
	t.Helper()
	n, err := s.normalized("c1", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	return specHash(n)
}

func TestSpecHashCanonical(t *testing.T) {
	base := mustHash(t, kubeletSpec())
	same := []struct {
		name string
		edit func(*ContainerSpec)
	}{
		{"env order", func(s *ContainerSpec) { s.Env = []string{"A=1", "B=2"} }},
		{"label map rebuilt", func(s *ContainerSpec) { s.Labels = map[string]string{"app": "kubelet", "role": "worker"} }},
		{"bind order", func(s *ContainerSpec) { slices.Reverse(s.Binds) }},
		{"bind spelling", func(s *ContainerSpec) {
			s.Binds = []string{"/var/lib/kubelet/:/var/lib/kubelet:rshared,rw", "/etc/kubernetes:/etc/kubernetes:ro"}
		}},
		{"capability spelling", func(s *ContainerSpec) { s.CapAdd = []string{"ALL", "CAP_ALL"}; s.CapDrop = []string{"sys_resource"} }},
		{"security opt order", func(s *ContainerSpec) { slices.Reverse(s.SecurityOpt) }},
		{"default restart policy spelled out", func(s *ContainerSpec) { s.RestartPolicy = RestartUnlessStopped }},
		{"cluster from options spelled out", func(s *ContainerSpec) { s.Cluster = "c1" }},
		{"empty slices", func(s *ContainerSpec) { s.Devices = []string{}; s.Tmpfs = map[string]string{} }},
	}
	for _, tt := range same {
		t.Run("same/"+tt.name, func(t *testing.T) {
			s := kubeletSpec()
			tt.edit(&s)
			if got := mustHash(t, s); got != base {
				t.Errorf("hash changed: %s, want %s", got, base)
			}
		})
	}
	different := []struct {
		name string
		edit func(*ContainerSpec)
	}{
		{"image", func(s *ContainerSpec) { s.Image = "singlecloud.test/kubernetes:v1.36.4" }},
		{"arg order", func(s *ContainerSpec) { slices.Reverse(s.Cmd) }},
		{"arg value", func(s *ContainerSpec) { s.Cmd[1] = "--v=4" }},
		{"env value", func(s *ContainerSpec) { s.Env[0] = "B=3" }},
		{"label value", func(s *ContainerSpec) { s.Labels["role"] = "master" }},
		{"propagation", func(s *ContainerSpec) { s.Binds[0] = "/var/lib/kubelet:/var/lib/kubelet" }},
		{"cluster", func(s *ContainerSpec) { s.Cluster = "c2" }},
		{"restart policy", func(s *ContainerSpec) { s.RestartPolicy = "always" }},
		{"privileged", func(s *ContainerSpec) { s.Privileged = true }},
		{"entrypoint nil", func(s *ContainerSpec) { s.Entrypoint = nil }},
	}
	for _, tt := range different {
		t.Run("different/"+tt.name, func(t *testing.T) {
			s := kubeletSpec()
			tt.edit(&s)
			if got := mustHash(t, s); got == base {
				t.Errorf("hash unchanged by %s", tt.name)
			}
		})
	}
}

// TestSpecHashGolden pins the canonical form: if it changes, every running
// zke container in the field gets replaced on the next run, so a change
// must be deliberate (and bump hashVersion).
func TestSpecHashGolden(t *testing.T) {
	s := ContainerSpec{Name: "etcd", Image: "x/etcd:1", Cmd: []string{"etcd", "--name=n1"},
		Env: []string{"Z=1", "A=2"}, Binds: []string{"/var/lib/etcd:/var/lib/etcd"}, NetworkMode: "host"}
	n, err := s.normalized("prod", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"name":"etcd","cluster":"prod","image":"x/etcd:1","cmd":["etcd","--name=n1"],"env":["A=2","Z=1"],"binds":["/var/lib/etcd:/var/lib/etcd"],"networkMode":"host","restartPolicy":"unless-stopped"}`
	if got := string(canonicalJSON(n)); got != wantJSON {
		t.Errorf("canonical JSON\n got %s\nwant %s", got, wantJSON)
	}
	const wantHash = "28b778132ba28e0f074112c2a9376e6c8130ff7c5bb0c8c5f046be9f84c0400f" // sha256 of hashVersion + wantJSON
	if got := specHash(n); got != wantHash {
		t.Errorf("hash %s, want %s", got, wantHash)
	}
}

func TestNormalizedLeavesInputAlone(t *testing.T) {
	s := kubeletSpec()
	before := kubeletSpec()
	n, err := s.normalized("c1", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	n.Env[0], n.Cmd[0], n.Labels["role"] = "X=1", "x", "x"
	if !reflect.DeepEqual(s, before) {
		t.Errorf("normalized or its result aliased the input:\n%+v\n%+v", s, before)
	}
}

func TestNormalizedRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(*ContainerSpec)
	}{
		{"no name", func(s *ContainerSpec) { s.Name = "" }},
		{"bad name", func(s *ContainerSpec) { s.Name = "kube let" }},
		{"slash in name", func(s *ContainerSpec) { s.Name = "a/b" }},
		{"no image", func(s *ContainerSpec) { s.Image = "" }},
		{"env without =", func(s *ContainerSpec) { s.Env = []string{"A"} }},
		{"env twice", func(s *ContainerSpec) { s.Env = []string{"A=1", "A=2"} }},
		{"reserved label", func(s *ContainerSpec) { s.Labels = map[string]string{LabelSpecHash: "x"} }},
		{"bad bind", func(s *ContainerSpec) { s.Binds = []string{"relative:/x"} }},
		{"two mounts on one target", func(s *ContainerSpec) { s.Mounts = []Mount{{Source: "/a", Target: "/etc/kubernetes"}} }},
		{"tmpfs on a bind target", func(s *ContainerSpec) { s.Tmpfs = map[string]string{"/var/lib/kubelet/": ""} }},
		{"relative tmpfs", func(s *ContainerSpec) { s.Tmpfs = map[string]string{"run": ""} }},
		{"mount type", func(s *ContainerSpec) { s.Mounts = []Mount{{Type: "nfs", Source: "/a", Target: "/b"}} }},
		{"relative mount source", func(s *ContainerSpec) { s.Mounts = []Mount{{Source: "a", Target: "/b"}} }},
		{"propagation on volume", func(s *ContainerSpec) {
			s.Mounts = []Mount{{Type: "volume", Source: "v", Target: "/b", Propagation: "rshared"}}
		}},
		{"bad propagation", func(s *ContainerSpec) { s.Mounts = []Mount{{Source: "/a", Target: "/b", Propagation: "up"}} }},
		{"bad device", func(s *ContainerSpec) { s.Devices = []string{"/dev/x:/dev/x:q"} }},
		{"restart policy", func(s *ContainerSpec) { s.RestartPolicy = "sometimes" }},
		{"restart count", func(s *ContainerSpec) { s.RestartPolicy = "always:3" }},
		{"cgroupns", func(s *ContainerSpec) { s.CgroupnsMode = "shared" }},
		{"userns", func(s *ContainerSpec) { s.UsernsMode = "private" }},
		{"cluster with newline", func(s *ContainerSpec) { s.Cluster = "a\nb" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kubeletSpec()
			tt.edit(&s)
			if _, err := s.normalized("c1", RestartUnlessStopped); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("normalized = %v, want ErrInvalidSpec", err)
			}
		})
	}
	if _, err := kubeletSpec().normalized("", RestartUnlessStopped); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("no cluster anywhere: %v, want ErrInvalidSpec", err)
	}
}

func TestLastCapability(t *testing.T) {
	for version, want := range map[string]int{"20.10.24+dfsg1": 37, "19.03.1": 37, "23.0.0": 40, "28.2.2": 40, "": 37} {
		if got := (Info{Version: version}).LastCapability(); got != want {
			t.Errorf("LastCapability(%q) = %d, want %d", version, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"kube-apiserver": true, "etcd_1": true, "a.b": true, "1x": true, "x": true, "zke-job-0a1b": true,
		"": false, "-x": false, ".x": false, "_x": false, "a b": false, "a/b": false, "a:b": false, "é": false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestCreateRequest(t *testing.T) {
	s := kubeletSpec()
	s.RestartPolicy = "on-failure:3"
	s.Devices = []string{"/dev/kmsg"}
	s.Mounts = []Mount{{Source: "/sys", Target: "/sys", ReadOnly: true, Propagation: "rslave"}, {Type: "tmpfs", Target: "/run"}}
	n, err := s.normalized("c1", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	b := createRequest(n, "h", true)
	wantLabels := map[string]string{LabelManaged: "true", LabelCluster: "c1", LabelSpecHash: "h", LabelJob: "true", "role": "worker", "app": "kubelet"}
	if !reflect.DeepEqual(b.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", b.Labels, wantLabels)
	}
	hc := b.HostConfig
	if hc.RestartPolicy != (apiRestartPolicy{Name: "on-failure", MaximumRetryCount: 3}) {
		t.Errorf("restart policy %+v", hc.RestartPolicy)
	}
	if !reflect.DeepEqual(hc.Devices, []apiDevice{{"/dev/kmsg", "/dev/kmsg", "rwm"}}) {
		t.Errorf("devices %+v", hc.Devices)
	}
	wantMounts := []apiMount{{Type: "tmpfs", Target: "/run"}, {Type: "bind", Source: "/sys", Target: "/sys", ReadOnly: true, BindOptions: &apiBindOptions{"rslave"}}}
	if !reflect.DeepEqual(hc.Mounts, wantMounts) {
		t.Errorf("mounts %+v, want %+v", hc.Mounts, wantMounts)
	}
	if hc.MaskedPaths != nil || hc.ReadonlyPaths != nil {
		t.Errorf("masked paths changed without systempaths=unconfined: %+v", hc)
	}
	n.SecurityOpt = append(n.SecurityOpt, "systempaths=unconfined")
	hc = createRequest(n, "h", false).HostConfig
	if hc.MaskedPaths == nil || len(*hc.MaskedPaths) != 0 || hc.ReadonlyPaths == nil || len(*hc.ReadonlyPaths) != 0 ||
		!slices.Equal(hc.SecurityOpt, []string{"apparmor=unconfined", "seccomp=unconfined"}) {
		t.Errorf("systempaths=unconfined not turned into empty masked and read-only paths: %+v", hc)
	}
	if data, _ := json.Marshal(hc); !strings.Contains(string(data), `"MaskedPaths":[],"ReadonlyPaths":[]`) {
		t.Errorf("host config JSON %s", data)
	}
	if !slices.Equal(hc.CapAdd, []string{"ALL"}) || !slices.Equal(hc.CapDrop, []string{"SYS_RESOURCE"}) || hc.PidMode != "host" {
		t.Errorf("host config %+v", hc)
	}
}

func TestWithAllPrivileges(t *testing.T) {
	s := ContainerSpec{Name: "kubelet", Image: "k", CapDrop: []string{"NET_RAW"}}
	if p := s.WithAllPrivileges(nil); !p.Privileged || len(p.CapAdd) != 0 {
		t.Errorf("nothing missing: %+v, want Privileged", p)
	}
	p := s.WithAllPrivileges([]string{"SYS_RESOURCE"})
	if p.Privileged {
		t.Error("Privileged set although a capability is missing")
	}
	want := ContainerSpec{Name: "kubelet", Image: "k",
		CapAdd: []string{"ALL"}, CapDrop: []string{"NET_RAW", "SYS_RESOURCE"},
		SecurityOpt:       []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"},
		DeviceCgroupRules: []string{"a *:* rwm"}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("WithAllPrivileges = %+v, want %+v", p, want)
	}
	if !slices.Equal(s.CapDrop, []string{"NET_RAW"}) {
		t.Errorf("input modified: %v", s.CapDrop)
	}
}

func TestMissingCapabilities(t *testing.T) {
	const all = uint64(1)<<41 - 1 // CHOWN .. CHECKPOINT_RESTORE
	tests := []struct {
		name    string
		capBnd  uint64
		lastCap int
		want    []string
	}{
		{"full set", all, 40, nil},
		{"this VM: no SYS_RESOURCE", all &^ (1 << 24), 40, []string{"SYS_RESOURCE"}},
		{"two missing", all &^ (1 << 21) &^ (1 << 0), 40, []string{"CHOWN", "SYS_ADMIN"}},
		{"old kernel", uint64(1)<<38 - 1, 37, nil},
		{"old kernel missing one", (uint64(1)<<38 - 1) &^ (1 << 25), 37, []string{"SYS_TIME"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MissingCapabilities(tt.capBnd, tt.lastCap); !slices.Equal(got, tt.want) {
				t.Errorf("MissingCapabilities(%#x, %d) = %v, want %v", tt.capBnd, tt.lastCap, got, tt.want)
			}
		})
	}
}
