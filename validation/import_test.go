package validation

import (
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// validKubeconfig is the smallest kubeconfig that can be imported.
const validKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t0k3n}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestValidateImport(t *testing.T) {
	tests := []struct {
		name   string
		req    model.ImportRequest
		want   []string
		reason string
	}{
		{"valid", model.ImportRequest{Name: "edge-1", Kubeconfig: validKubeconfig}, nil, ""},
		{"name empty", model.ImportRequest{Kubeconfig: validKubeconfig}, []string{"name"}, "is required"},
		{"name not a label", model.ImportRequest{Name: "Edge_1", Kubeconfig: validKubeconfig}, []string{"name"}, "lower case"},
		{"name too long", model.ImportRequest{Name: "a234567890123456789012345678901234567890123456789012345678901234", Kubeconfig: validKubeconfig}, []string{"name"}, "at most 63"},
		{"kubeconfig empty", model.ImportRequest{Name: "edge-1"}, []string{"kubeconfig"}, "is required"},
		{"kubeconfig blank", model.ImportRequest{Name: "edge-1", Kubeconfig: " \n\t"}, []string{"kubeconfig"}, "is required"},
		{"kubeconfig not a kubeconfig", model.ImportRequest{Name: "edge-1", Kubeconfig: "not yaml at all"}, []string{"kubeconfig"}, "is not a kubeconfig"},
		{"kubeconfig with an exec plugin", model.ImportRequest{Name: "edge-1",
			Kubeconfig: strings.Replace(validKubeconfig, "{token: t0k3n}", "{exec: {command: id}}", 1)},
			[]string{"kubeconfig.users[0].user.exec"}, "exec plugins are not allowed; embed a token or client certificate"},
		{"kubeconfig with a token file", model.ImportRequest{Name: "edge-1",
			Kubeconfig: strings.Replace(validKubeconfig, "{token: t0k3n}", "{tokenFile: /etc/shadow}", 1)},
			[]string{"kubeconfig.users[0].user.tokenFile"}, "file paths are not allowed"},
		{"both at once", model.ImportRequest{Name: "-x"}, []string{"name", "kubeconfig"}, "start and end"},
		{"name and kubeconfig field", model.ImportRequest{Name: "-x",
			Kubeconfig: strings.Replace(validKubeconfig, "https://10.0.0.1", "https://u:pw@10.0.0.1", 1)},
			[]string{"name", "kubeconfig.clusters[0].cluster.server"}, "start and end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateImport(tt.req)
			checkViolations(t, err, tt.want, tt.reason)
			if err != nil && strings.Contains(err.Error(), ":pw@") {
				t.Errorf("error %q quotes the server URL's password", err)
			}
		})
	}
}

func TestValidateKubeconfig(t *testing.T) {
	tests := []struct {
		name, kubeconfig string
		want             []string
		reason           string
	}{
		{"valid", validKubeconfig, nil, ""},
		{"empty", "", []string{"kubeconfig"}, "is required"},
		{"client certificate path", strings.Replace(validKubeconfig, "{token: t0k3n}", "{client-certificate: /root/admin.crt, client-key-data: eA==}", 1),
			[]string{"kubeconfig.users[0].user.client-certificate"}, "client-certificate-data"},
		{"auth provider", strings.Replace(validKubeconfig, "{token: t0k3n}", "{auth-provider: {name: gcp}}", 1),
			[]string{"kubeconfig.users[0].user.auth-provider"}, "not allowed"},
		{"invalid YAML", "clusters: [\n  token: t0k3n", []string{"kubeconfig"}, "is not valid YAML (line"},
		{"exec set twice, the last null", strings.Replace(validKubeconfig, "{token: t0k3n}", "{exec: {command: id}, exec: null, token: t0k3n}", 1),
			[]string{"kubeconfig.users[0].user.exec"}, "is set twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateKubeconfig(tt.kubeconfig)
			checkViolations(t, err, tt.want, tt.reason)
			if err != nil && strings.Contains(err.Error(), "t0k3n") {
				t.Errorf("error %q quotes the kubeconfig", err)
			}
		})
	}
}
