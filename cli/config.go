package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/internal/durable"
)

// Config is the CLI's file (like a kubeconfig): named contexts, each a
// server and a user's token, and the one in use. It holds tokens, so it is
// written 0600 in a 0700 directory.
type Config struct {
	CurrentContext string    `json:"current-context,omitempty"`
	Contexts       []Context `json:"contexts,omitempty"`
}

// Context is one server and the user logged in to it.
type Context struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	User   string `json:"user,omitempty"`
	// Token is the bearer token of the last login; empty after logout.
	Token string `json:"token,omitempty"`
	// InsecureSkipTLSVerify and CertificateAuthority are the TLS settings
	// the login was made with, kept so later commands need no flags.
	InsecureSkipTLSVerify bool   `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthority  string `json:"certificate-authority,omitempty"`
}

// configFileMode and configDirMode keep the tokens to their owner.
const (
	configFileMode fs.FileMode = 0o600
	configDirMode  fs.FileMode = 0o700
)

// defaultConfigPath is <user config dir>/singlecloud/config.yaml, or
// $SINGLECLOUD_CONFIG when set.
func defaultConfigPath(getenv func(string) string) (string, error) {
	if p := getenv("SINGLECLOUD_CONFIG"); p != "" {
		return p, nil
	}
	dir, err := userConfigDir(getenv)
	if err != nil {
		return "", fmt.Errorf("find the user's config directory (give --config): %w", err)
	}
	return filepath.Join(dir, "singlecloud", "config.yaml"), nil
}

// userConfigDir is os.UserConfigDir reading the environment through
// getenv, so that tests (and the e2e's pseudo-terminal) choose it.
func userConfigDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return d, nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config"), nil
	}
	return os.UserConfigDir()
}

// loadConfig reads path; a missing file is an empty config.
func loadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &c, nil
}

// save writes c to path atomically (a temporary file renamed over it),
// 0600, creating the directory 0700 when it does not exist.
func (c *Config) save(path string) error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	return writeFileAtomic(path, b, configFileMode)
}

// writeFileAtomic writes data to path with mode through a temporary file in
// the same directory (durable.WriteFile), so that a reader never sees half
// a file, a crash never leaves one, and the secret is never readable by
// others, even for a moment.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, configDirMode); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	err := durable.WriteFile(path, mode, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// context returns the context called name, or nil.
func (c *Config) context(name string) *Context {
	for i := range c.Contexts {
		if c.Contexts[i].Name == name {
			return &c.Contexts[i]
		}
	}
	return nil
}

// upsert stores ctx under its name, replacing one of the same name.
func (c *Config) upsert(ctx Context) {
	if cur := c.context(ctx.Name); cur != nil {
		*cur = ctx
		return
	}
	c.Contexts = append(c.Contexts, ctx)
	slices.SortFunc(c.Contexts, func(a, b Context) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

// contextName is the default name of a login's context: user@host, as
// kubeconfig names them.
func contextName(server, user string) string {
	host := server
	if u, err := url.Parse(server); err == nil && u.Host != "" {
		host = u.Host
	}
	return user + "@" + host
}
