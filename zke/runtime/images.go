package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// RegistryAuth are the credentials of a private registry. Its String and
// LogValue never show the password.
type RegistryAuth struct {
	// User and Password authenticate to Server ("registry.example:5000");
	// an empty Server is the registry of the image reference.
	User, Password, Server string
}

// String shows the user and server only.
func (a RegistryAuth) String() string {
	if a == (RegistryAuth{}) {
		return "no registry credentials"
	}
	server := a.Server
	if server == "" {
		server = "the image's registry"
	}
	return fmt.Sprintf("registry credentials of %s at %s", a.User, server)
}

// GoString keeps %#v from printing the password.
func (a RegistryAuth) GoString() string { return a.String() }

// LogValue keeps slog from printing the password.
func (a RegistryAuth) LogValue() slog.Value {
	return slog.GroupValue(slog.String("user", a.User), slog.String("server", a.Server))
}

// ImagePresent reports whether the image ref is on the node.
func (c *Docker) ImagePresent(ctx context.Context, ref string) (bool, error) {
	if ref == "" {
		return false, fmt.Errorf("%w: empty image reference", ErrInvalidSpec)
	}
	err := c.do(ctx, call{op: "inspect image " + ref, method: http.MethodGet, path: "/images/" + escapeRef(ref) + "/json"}, nil)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Pull pulls ref from its registry, authenticating with auth when it is
// not zero. It blocks until the pull ends or ctx does (no per-call
// timeout: a large image over a slow link takes long); progress goes to
// the logger. An error the daemon reports in the stream is a
// *StreamError.
func (c *Docker) Pull(ctx context.Context, ref string, auth RegistryAuth) error {
	repo, tag, err := splitRef(ref)
	if err != nil {
		return err
	}
	op := "pull " + ref
	cl := call{op: op, method: http.MethodPost, path: "/images/create", query: url.Values{"fromImage": {repo}, "tag": {tag}}}
	if auth != (RegistryAuth{}) {
		server := auth.Server
		if server == "" {
			server = registryOf(repo)
		}
		data, err := json.Marshal(map[string]string{"username": auth.User, "password": auth.Password, "serveraddress": server})
		if err != nil {
			return fmt.Errorf("%s on %s: encode credentials: %w", op, c.node, err)
		}
		cl.header = http.Header{"X-Registry-Auth": {base64.URLEncoding.EncodeToString(data)}}
	}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = readMessages(resp.Body, op, func(m jsonMessage) {
		if m.Progress == "" && m.Status != "" {
			c.log.Debug("pull", "image", ref, "layer", m.ID, "status", m.Status)
		}
	})
	return c.streamError(ctx, op, err)
}

// Load loads a docker-archive (docker save) read from r, as docker load
// does, and returns the names the daemon reports loaded ("Loaded image:
// x:1"; an untagged image gives "sha256:..."). It blocks until the
// daemon has read and imported r or ctx ends; r is not closed. An error the
// daemon reports (such as an OCI-only archive on Docker 20.10) is a
// *StreamError.
func (c *Docker) Load(ctx context.Context, r io.Reader) ([]string, error) {
	op := "load image archive"
	resp, err := c.send(ctx, call{op: op, method: http.MethodPost, path: "/images/load",
		query: url.Values{"quiet": {"1"}}, body: r, contentType: "application/x-tar"})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var loaded []string
	err = readMessages(resp.Body, op, func(m jsonMessage) {
		for _, line := range strings.Split(m.Stream, "\n") {
			if name, ok := strings.CutPrefix(line, "Loaded image: "); ok {
				loaded = append(loaded, strings.TrimSpace(name))
			} else if id, ok := strings.CutPrefix(line, "Loaded image ID: "); ok {
				loaded = append(loaded, strings.TrimSpace(id))
			}
		}
	})
	if err := c.streamError(ctx, op, err); err != nil {
		return nil, err
	}
	c.log.Info("images loaded", "images", loaded)
	return loaded, nil
}

// Save streams the image ref as a docker-archive (docker save), the form
// containerd's `ctr images import` also reads. The caller reads the
// archive to its end and closes it; ctx bounds the whole transfer (no
// per-call timeout: an image is large).
func (c *Docker) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	if ref == "" {
		return nil, fmt.Errorf("%w: empty image reference", ErrInvalidSpec)
	}
	resp, err := c.send(ctx, call{op: "save image " + ref, method: http.MethodGet, path: "/images/get", query: url.Values{"names": {ref}}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// streamError classifies the end of a streamed answer.
func (c *Docker) streamError(ctx context.Context, op string, err error) error {
	var se *StreamError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return fmt.Errorf("docker on %s: %w", c.node, err)
	case ctx.Err() == nil && isDecodeError(err):
		return fmt.Errorf("%s on %s: malformed answer: %w", op, c.node, err)
	}
	return c.connError(ctx, op, err)
}

// splitRef splits an image reference into the repository and the tag (or
// digest) the pull API wants; no tag means latest (an empty tag would pull
// every tag).
func splitRef(ref string) (repo, tag string, err error) {
	if ref == "" || strings.ContainsAny(ref, " \t\n") {
		return "", "", fmt.Errorf("%w: image reference %q", ErrInvalidSpec, ref)
	}
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:], nil
	}
	slash := strings.LastIndex(ref, "/")
	if i := strings.LastIndex(ref, ":"); i > slash {
		return ref[:i], ref[i+1:], nil
	}
	return ref, "latest", nil
}

// registryOf returns the registry host of a repository, Docker Hub's when
// the first component is not a host name.
func registryOf(repo string) string {
	first, _, ok := strings.Cut(repo, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return first
	}
	return "https://index.docker.io/v1/"
}
