package validation

import (
	"math"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestValidateApplication(t *testing.T) {
	three := 3
	ninety, ten := 90.0, 10.0
	good := func() model.ApplicationSpec {
		return model.ApplicationSpec{Version: "v2", Replicas: 10, Namespace: "apps", Deployments: []model.VersionDeployment{
			{Version: "v1", Image: "busybox:1.36", Percent: &ninety, Ports: []model.ApplicationPort{{Name: "http", Port: 8080}},
				Env: []model.EnvVar{{Name: "MODE", Value: "a b; $(x)"}}, Command: []string{"sh", "-c", "sleep 1; echo $HOME"},
				Resources: model.Resources{CPULimit: "500m", MemoryLimit: "64Mi"}},
			{Version: "v2.0", Image: "registry.example.com/team/web:v2", Percent: &ten, ImagePullPolicy: "Never"},
		}}
	}
	cases := []struct {
		name   string
		app    string
		edit   func(*model.ApplicationSpec)
		want   []string
		reason string
	}{
		{"good", "web", func(*model.ApplicationSpec) {}, nil, ""},
		{"replicas", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Percent, s.Deployments[0].Replicas = nil, &three }, nil, ""},
		{"bad name", "Web_1", func(*model.ApplicationSpec) {}, []string{"name"}, "DNS-1123"},
		{"long name", "a123456789a123456789a123456789a123456789a", func(*model.ApplicationSpec) {}, []string{"name"}, "at most 40"},
		{"no version", "web", func(s *model.ApplicationSpec) { s.Version = "" }, []string{"version"}, "is required"},
		{"no deployments", "web", func(s *model.ApplicationSpec) { s.Deployments = nil }, []string{"deployments"}, "at least one"},
		{"both sizes", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Replicas = &three }, []string{"deployments[0]"}, "both"},
		{"no size", "web", func(s *model.ApplicationSpec) { s.Deployments[1].Percent = nil }, []string{"deployments[1]"}, "neither"},
		{"percent without replicas", "web", func(s *model.ApplicationSpec) { s.Replicas = 0 }, []string{"deployments[0].percent", "deployments[1].percent"}, "set replicas"},
		{"percents above 100", "web", func(s *model.ApplicationSpec) { p := 20.0; s.Deployments[1].Percent = &p }, []string{"deployments"}, "more than 100"},
		{"NaN percent", "web", func(s *model.ApplicationSpec) { p := math.NaN(); s.Deployments[1].Percent = &p }, []string{"deployments[1].percent"}, "between"},
		{"colliding versions", "web", func(s *model.ApplicationSpec) { s.Deployments[1].Version = "V1" }, []string{"deployments[1].version"}, "same objects"},
		{"image with a space", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Image = "busybox; rm -rf /" }, []string{"deployments[0].image"}, "white space"},
		{"pull policy", "web", func(s *model.ApplicationSpec) { s.Deployments[0].ImagePullPolicy = "Sometimes" }, []string{"deployments[0].imagePullPolicy"}, ""},
		{"env name", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Env[0].Name = "A=B" }, []string{"deployments[0].env[0].name"}, "variable name"},
		{"NUL in a word", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Command[2] = "a\x00b" }, []string{"deployments[0].command[2]"}, "NUL"},
		{"port", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Ports[0].Port = 70000 }, []string{"deployments[0].ports[0].port"}, ""},
		{"protocol", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Ports[0].Protocol = "SCTP" }, []string{"deployments[0].ports[0].protocol"}, ""},
		{"quantity", "web", func(s *model.ApplicationSpec) { s.Deployments[0].Resources.MemoryLimit = "lots" }, []string{"deployments[0].resources.memoryLimit"}, "quantity"},
		{"namespace", "web", func(s *model.ApplicationSpec) { s.Namespace = "Apps" }, []string{"namespace"}, ""},
		{"timeout", "web", func(s *model.ApplicationSpec) { s.InstallTimeoutSeconds = 5 }, []string{"installTimeoutSeconds"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			tc.edit(&s)
			err := ValidateApplication(tc.app, s)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateApplication = %v, want nil", err)
				}
				return
			}
			checkViolations(t, err, tc.want, tc.reason)
		})
	}
}

func TestValidateEnvironment(t *testing.T) {
	cases := []struct {
		name string
		env  model.Environment
		want []string
	}{
		{"good", model.Environment{Name: "edge", Kind: model.EnvironmentHosts, Selector: "group=web,rack!=a"}, nil},
		{"kubernetes", model.Environment{Name: "edge", Kind: model.EnvironmentKubernetes}, []string{"kind"}},
		{"unknown kind", model.Environment{Name: "edge", Kind: "vm", Selector: "a=b"}, []string{"kind"}},
		{"no selector", model.Environment{Name: "edge", Kind: model.EnvironmentHosts}, []string{"selector"}},
		{"bad selector", model.Environment{Name: "edge", Kind: model.EnvironmentHosts, Selector: "a=(b"}, []string{"selector"}},
		{"bad name", model.Environment{Name: "Edge!", Kind: model.EnvironmentHosts, Selector: "a=b"}, []string{"name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateEnvironment(tc.env)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ValidateEnvironment = %v, want nil", err)
				}
				return
			}
			checkViolations(t, err, tc.want, "")
		})
	}
}
