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
