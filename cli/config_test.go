package cli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigSaveLoadModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(dir string) string
		// dirMode is checked only when the CLI made the directory.
		dirMode os.FileMode
	}{
		{"a new directory is made 0700", func(d string) string { return filepath.Join(d, "new", "singlecloud", "config.yaml") }, 0o700},
		{"an existing directory is kept", func(d string) string { return filepath.Join(d, "config.yaml") }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.path(dir)
			c := &Config{}
			c.upsert(Context{Name: "b", Server: "http://b", User: "admin", Token: "tok-b"})
			c.upsert(Context{Name: "a", Server: "http://a", User: "ann", Token: "tok-a"})
			c.CurrentContext = "a"
			if err := c.save(path); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("config file: %v mode %v, want 0600", err, st.Mode().Perm())
			}
			if tc.dirMode != 0 {
				if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != tc.dirMode {
					t.Errorf("config dir: %v mode %v, want %v", err, st.Mode().Perm(), tc.dirMode)
				}
			}
			got, err := loadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.CurrentContext != "a" || len(got.Contexts) != 2 || got.Contexts[0].Name != "a" || got.context("b").Token != "tok-b" {
				t.Errorf("loaded %+v", got)
			}
			// Saving again replaces the file (no temporary left behind).
			got.upsert(Context{Name: "a", Server: "http://a2"})
			if err := got.save(path); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(filepath.Dir(path))
			if len(entries) != 1 {
				t.Errorf("files beside the config: %v", entries)
			}
		})
	}
}

func TestLoadConfigMissingAndBroken(t *testing.T) {
	dir := t.TempDir()
	c, err := loadConfig(filepath.Join(dir, "none.yaml"))
	if err != nil || len(c.Contexts) != 0 {
		t.Errorf("a missing config: %v %+v", err, c)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("contexts: [{name: a, serverr: x}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfig(broken); err == nil {
		t.Error("an unknown field in the config was accepted")
	}
}

func TestLoginContext(t *testing.T) {
	cfg := &Config{CurrentContext: "admin@h:1", Contexts: []Context{
		{Name: "admin@h:1", Server: "http://h:1", User: "admin", Token: "t1", InsecureSkipTLSVerify: true},
		{Name: "lab", Server: "https://lab:443", User: "ann", Token: "t2"},
	}}
	for _, tc := range []struct {
		name string
		g    globals
		user string
		want Context
	}{
		{"re-login to the current context", globals{}, "", Context{Name: "admin@h:1", Server: "http://h:1", User: "admin", Token: "t1", InsecureSkipTLSVerify: true}},
		{"another user on the current server", globals{}, "ann", Context{Name: "ann@h:1", Server: "http://h:1", User: "ann", InsecureSkipTLSVerify: true}},
		{"a new server", globals{server: "http://x:2/"}, "bob", Context{Name: "bob@x:2", Server: "http://x:2/", User: "bob"}},
		{"a named context that exists", globals{context: "lab"}, "", Context{Name: "lab", Server: "https://lab:443", User: "ann", Token: "t2"}},
		{"a new named context", globals{context: "new", server: "http://n:3", caFile: "/ca.pem"}, "eve", Context{Name: "new", Server: "http://n:3", User: "eve", CertificateAuthority: "/ca.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{g: tc.g}
			if got := a.loginContext(cfg, tc.user); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDefaultConfigPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"SINGLECLOUD_CONFIG": "/x/c.yaml", "HOME": "/h"}, "/x/c.yaml"},
		{map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/xdg/singlecloud/config.yaml"},
		{map[string]string{"HOME": "/h"}, "/h/.config/singlecloud/config.yaml"},
	} {
		if got, err := defaultConfigPath(env(tc.env)); err != nil || got != tc.want {
			t.Errorf("%v: %q %v, want %q", tc.env, got, err, tc.want)
		}
	}
}

// TestWriteFileAtomic: the file is written whole (synced, renamed, its
// directory synced) with its mode, and no temporary file is left, even
// when the write fails.
func TestWriteFileAtomic(t *testing.T) {
	root := t.TempDir()
	blocker := filepath.Join(root, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		path    string
		wantErr bool
	}{
		{"a new file", filepath.Join(root, "a.yaml"), false},
		{"over an old one", filepath.Join(root, "a.yaml"), false},
		{"in a new directory", filepath.Join(root, "d", "b.yaml"), false},
		{"under a file", filepath.Join(blocker, "c.yaml"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := writeFileAtomic(tc.path, []byte(tc.name), 0o600)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			b, err := os.ReadFile(tc.path)
			if err != nil || string(b) != tc.name {
				t.Errorf("read %q, %v", b, err)
			}
			if fi, err := os.Stat(tc.path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %v, %v", fi.Mode(), err)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(tc.path), ".*.tmp-*"))
			if len(left) > 0 {
				t.Errorf("left %q", left)
			}
		})
	}
}
