package docker

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func intp(i int) *int { return &i }

func TestContainerName(t *testing.T) {
	for _, tc := range []struct {
		app, version string
		i            int
		want         string
	}{
		{"web", "v1", 0, "sc-web-v1-0"},
		{"web", "V2.1_rc", 3, "sc-web-v2-1-rc-3"},
	} {
		if got := containerName(tc.app, tc.version, tc.i); got != tc.want {
			t.Errorf("containerName(%q, %q, %d) = %q, want %q", tc.app, tc.version, tc.i, got, tc.want)
		}
	}
}

func TestSpecHash(t *testing.T) {
	base := model.VersionDeployment{Version: "v1", Image: "nginx:1", Replicas: intp(2)}
	h := specHash(base)
	if len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("specHash = %q, want 16 hex digits", h)
	}
	scaled := base
	scaled.Replicas = intp(5)
	explicit := base
	explicit.ImagePullPolicy = "IfNotPresent"
	changed := base
	changed.Image = "nginx:2"
	other := base
	other.Version = "v2"
	for _, tc := range []struct {
		name string
		d    model.VersionDeployment
		same bool
	}{
		{"scaled", scaled, true},
		{"default pull policy spelled out", explicit, true},
		{"new image", changed, false},
		{"other version", other, false},
	} {
		if got := specHash(tc.d) == h; got != tc.same {
			t.Errorf("%s: same hash = %v, want %v", tc.name, got, tc.same)
		}
	}
}

func TestRunArgv(t *testing.T) {
	prefix := []string{"docker", "run", "-d", "--name", "sc-web-v1-0", "--restart", "unless-stopped", "--network", "host",
		"--label", "io.singlecloud.managed-by=singlecloud", "--label", "io.singlecloud.app=web",
		"--label", "io.singlecloud.version=v1", "--label", "io.singlecloud.spec-hash=abcd"}
	for _, tc := range []struct {
		name    string
		d       model.VersionDeployment
		want    []string // after prefix
		wantErr string
	}{
		{
			name: "image only",
			d:    model.VersionDeployment{Version: "v1", Image: "nginx:1"},
			want: []string{"--pull", "missing", "nginx:1"},
		},
		{
			name: "args without command",
			d:    model.VersionDeployment{Version: "v1", Image: "busybox:1.36", Args: []string{"sleep", "3600"}},
			want: []string{"--pull", "missing", "busybox:1.36", "sleep", "3600"},
		},
		{
			name: "command and args",
			d: model.VersionDeployment{Version: "v1", Image: "busybox:1.36", ImagePullPolicy: "Never",
				Command: []string{"/bin/sh", "-c"}, Args: []string{"echo 'hi there'; sleep 1"}},
			want: []string{"--pull", "never", "--entrypoint", "/bin/sh", "busybox:1.36", "-c", "echo 'hi there'; sleep 1"},
		},
		{
			name: "env and limits",
			d: model.VersionDeployment{Version: "v1", Image: "nginx:1", ImagePullPolicy: "Always",
				Env:       []model.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y z"}},
				Resources: model.Resources{CPULimit: "500m", MemoryLimit: "128Mi", CPURequest: "100m", MemoryRequest: "64Mi"}},
			want: []string{"-e", "A=1", "-e", "B=x=y z", "--cpus", "0.5", "--memory", "134217728", "--pull", "always", "nginx:1"},
		},
		{
			name: "whole and decimal limits",
			d:    model.VersionDeployment{Version: "v1", Image: "nginx:1", ImagePullPolicy: "IfNotPresent", Resources: model.Resources{CPULimit: "1.5", MemoryLimit: "1G"}},
			want: []string{"--cpus", "1.5", "--memory", "1000000000", "--pull", "missing", "nginx:1"},
		},
		{
			name: "zero limits are none",
			d:    model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{CPULimit: "0", MemoryLimit: "0"}},
			want: []string{"--pull", "missing", "nginx:1"},
		},
		{
			name:    "bad cpu",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{CPULimit: "lots"}},
			wantErr: "version v1: resources.cpuLimit",
		},
		{
			name:    "negative memory",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{MemoryLimit: "-1Mi"}},
			wantErr: "version v1: resources.memoryLimit",
		},
		{
			name:    "memory beyond int64 (was --memory 0)",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{MemoryLimit: "1e19"}},
			wantErr: "version v1: resources.memoryLimit: \"1e19\" is more than 1Pi",
		},
		{
			name:    "cpus beyond int64 millicores (was --cpus -1)",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{CPULimit: "8Ei"}},
			wantErr: "version v1: resources.cpuLimit: \"8Ei\" is more than 1024 CPUs",
		},
		{
			name:    "memory below Docker's minimum",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{MemoryLimit: "4Mi"}},
			wantErr: "version v1: resources.memoryLimit: \"4Mi\" is less than Docker's smallest memory limit",
		},
		{
			name: "the bounds themselves",
			d:    model.VersionDeployment{Version: "v1", Image: "nginx:1", Resources: model.Resources{CPULimit: "1024", MemoryLimit: "1Pi"}},
			want: []string{"--cpus", "1024", "--memory", "1125899906842624", "--pull", "missing", "nginx:1"},
		},
		{
			name:    "bad pull policy",
			d:       model.VersionDeployment{Version: "v1", Image: "nginx:1", ImagePullPolicy: "Sometimes"},
			wantErr: "version v1: imagePullPolicy",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runArgv("web", tc.d, "sc-web-v1-0", "abcd")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]string(nil), prefix...), tc.want...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("argv\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestListingArgv(t *testing.T) {
	filters := []string{"--filter", "label=io.singlecloud.managed-by=singlecloud", "--filter", "label=io.singlecloud.app=web"}
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"list", listArgv("web"), append(append([]string{"docker", "ps", "-a", "--no-trunc"}, filters...),
			"--format", `{"name":{{json .Names}},"specHash":{{json (.Label "io.singlecloud.spec-hash")}},"state":{{json .State}}}`)},
		{"ids", idsArgv("web"), append([]string{"docker", "ps", "-a", "-q", "--no-trunc"}, filters...)},
		{"inspect", inspectArgv([]string{"id1", "id2"}), []string{"docker", "inspect", "--type", "container", "--format", inspectFormat, "id1", "id2"}},
		{"rm", removeArgv([]string{"a", "b"}), []string{"docker", "rm", "-f", "-v", "a", "b"}},
		{"version", versionArgv(), []string{"docker", "version", "--format", "{{.Server.Version}}"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s argv\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		out     string
		want    []listed
		wantErr bool
	}{
		{name: "none", out: "", want: nil},
		{
			name: "two",
			out: `{"name":"sc-web-v1-0","specHash":"0123456789abcdef","state":"running"}
{"name":"sc-web-v1-1","specHash":"","state":"exited"}
`,
			want: []listed{{"sc-web-v1-0", "0123456789abcdef", "running"}, {"sc-web-v1-1", "", "exited"}},
		},
		{
			name: "linked names",
			out:  `{"name":"sc-web-v1-0,other/alias","specHash":"ff","state":"restarting"}` + "\n",
			want: []listed{{"sc-web-v1-0", "ff", "restarting"}},
		},
		{name: "not json", out: "sc-web-v1-0\tff\trunning\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseList([]byte(tc.out))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseInspect(t *testing.T) {
	out := `{"name":"/sc-web-v1-0","version":"v1","specHash":"0123456789abcdef","status":"running","running":true,"restarting":false,"startedAt":"2024-05-01T10:00:00.123456789Z","exitCode":0,"health":"","restartCount":0}
{"name":"/sc-web-v2-0","version":"v2","specHash":"fedcba9876543210","status":"restarting","running":true,"restarting":true,"startedAt":"2024-05-01T10:00:05Z","exitCode":1,"health":"unhealthy","restartCount":4}
{"name":"/sc-web-v2-1","version":"v2","specHash":"fedcba9876543210","status":"created","running":false,"restarting":false,"startedAt":"0001-01-01T00:00:00Z","exitCode":0,"health":"","restartCount":0}
`
	got, err := parseInspect([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []container{
		{Name: "sc-web-v1-0", Version: "v1", SpecHash: "0123456789abcdef", Status: "running", Running: true,
			StartedAt: time.Date(2024, 5, 1, 10, 0, 0, 123456789, time.UTC)},
		{Name: "sc-web-v2-0", Version: "v2", SpecHash: "fedcba9876543210", Status: "restarting", Running: true, Restarting: true,
			StartedAt: time.Date(2024, 5, 1, 10, 0, 5, 0, time.UTC), ExitCode: 1, Health: "unhealthy", RestartCount: 4},
		{Name: "sc-web-v2-1", Version: "v2", SpecHash: "fedcba9876543210", Status: "created"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if _, err := parseInspect([]byte(`{"name":"/x","startedAt":"yesterday"}`)); err == nil {
		t.Error("a bad time parsed")
	}
	if ids := parseIDs([]byte("aaa\nbbb\n\n")); !reflect.DeepEqual(ids, []string{"aaa", "bbb"}) {
		t.Errorf("parseIDs = %q", ids)
	}
}
