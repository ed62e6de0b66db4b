package main

import (
	"path/filepath"
	"testing"
)

// TestImageDirConfig checks where the image directory comes from: the
// flag, else SINGLECLOUD_IMAGE_DIR, else "images" beside the database,
// always made absolute.
func TestImageDirConfig(t *testing.T) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default in the default data directory", nil, nil, abs("singlecloud-data/images")},
		{"default in --data-dir", []string{"--data-dir", "/var/lib/sc"}, nil, "/var/lib/sc/images"},
		{"default beside --db", []string{"--db", "/var/lib/sc/state.db"}, nil, "/var/lib/sc/images"},
		{"default beside SINGLECLOUD_DB", nil, map[string]string{"SINGLECLOUD_DB": "/srv/sc.db"}, "/srv/images"},
		{"environment", nil, map[string]string{"SINGLECLOUD_IMAGE_DIR": "/srv/archives"}, "/srv/archives"},
		{"flag wins", []string{"--image-dir", "/data/img"}, map[string]string{"SINGLECLOUD_IMAGE_DIR": "/srv/archives"}, "/data/img"},
		{"relative flag made absolute", []string{"--image-dir", "img"}, nil, abs("img")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseConfig(tt.args, func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if c.ImageDir != tt.want {
				t.Fatalf("ImageDir = %q, want %q", c.ImageDir, tt.want)
			}
		})
	}
}
