package validation

import "testing"

func TestValidateArtifactMirror(t *testing.T) {
	tests := []struct {
		name, mirror string
		want         []string
		reason       string
	}{
		{"none", "", nil, ""},
		{"http with port and path", "http://10.0.0.1:8080/mirror/", nil, ""},
		{"https host", "https://files.example.com", nil, ""},
		{"ftp", "ftp://files.example.com/", []string{"artifactMirror"}, `scheme "ftp"`},
		{"bare host", "files.example.com", []string{"artifactMirror"}, "scheme"},
		{"user", "https://u:p@files.example.com/", []string{"artifactMirror"}, "user or password"},
		{"query", "https://files.example.com/?x=1", []string{"artifactMirror"}, "query or fragment"},
		{"dot dot", "https://files.example.com/a/../b", []string{"artifactMirror"}, ".."},
		{"space", "https://files.example.com/a b", []string{"artifactMirror"}, "white space"},
		{"newline", "https://files.example.com/\nx", []string{"artifactMirror"}, "control"},
		{"port 0", "http://files.example.com:0/", []string{"artifactMirror"}, "port"},
		{"no host", "http:///mirror", []string{"artifactMirror"}, "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.ArtifactMirror = tt.mirror
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
		})
	}
}

func TestValidateImageRepository(t *testing.T) {
	tests := []struct {
		name, repo string
		want       []string
		reason     string
	}{
		{"none", "", nil, ""},
		{"host", "registry.example.com", nil, ""},
		{"host port path", "127.0.0.1:5000/k8s", nil, ""},
		{"mirror path", "registry.aliyuncs.com/google_containers", nil, ""},
		{"tag", "registry.example.com/k8s:v1", []string{"imageRepository"}, "tag or digest"},
		{"digest", "registry.example.com/k8s@sha256:00", []string{"imageRepository"}, "tag or digest"},
		{"upper case path", "registry.example.com/K8s", []string{"imageRepository"}, "not a registry path"},
		{"space", "registry example", []string{"imageRepository"}, "not a registry path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCluster(t)
			c.ImageRepository = tt.repo
			checkViolations(t, ValidateCreate(c), tt.want, tt.reason)
		})
	}
}
