// Package console is singlecloud's web console: a page and its static
// assets (plain JavaScript modules and CSS, embedded with go:embed, built
// by no toolchain), served by the same binary. It holds no data and has no
// back door: everything it shows and does goes through the REST API and
// its websockets with the user's token, so that a user sees and changes in
// it exactly what the API lets them. It works offline (nothing is loaded
// from elsewhere), and every answer carries a Content-Security-Policy that
// allows only its own scripts and styles.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// The paths it serves: the page at Root, the assets under AssetsDir.
const (
	Root      = "/"
	AssetsDir = "/ui/"
)

// securityHeaders are set on every answer. The policy allows scripts,
// styles, images and connections (the API, its websockets) from the
// console's own origin only: no inline script or style, no eval, no
// framing by another site (clickjacking), no plugin, and no form posting
// elsewhere. The page sends no Referer, so no URL of the console leaks to
// another site.
var securityHeaders = [...][2]string{
	{"Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "no-referrer"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
	{"Cross-Origin-Resource-Policy", "same-origin"},
	{"Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()"},
}

// asset is one embedded file, ready to serve.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the console. Build it once with New.
type Handler struct {
	files   map[string]asset // by path under assets/
	modTime time.Time
}

// New reads the embedded assets and computes their validators, so that
// serving them is a map lookup.
func New() (*Handler, error) {
	h := &Handler{files: map[string]asset{}, modTime: time.Now()}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.files[strings.TrimPrefix(p, "assets/")] = asset{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console assets: %w", err)
	}
	if _, ok := h.files["index.html"]; !ok {
		return nil, fmt.Errorf("console assets: index.html is missing")
	}
	return h, nil
}

// ServeHTTP answers GET and HEAD of Root (the page) and of AssetsDir's
// files; anything else is a 404 (405 for another method). Assets are
// revalidated on each load (no-cache with an ETag): a new singlecloud
// never runs with an old script, and an unchanged one costs a 304.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, kv := range securityHeaders {
		w.Header().Set(kv[0], kv[1])
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name, ok := h.name(r.URL.Path)
	a, found := h.files[name]
	if !ok || !found {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", a.etag)
	http.ServeContent(w, r, "", h.modTime, bytes.NewReader(a.body))
}

// name maps a request path to an asset's name: Root is the page; a path
// under AssetsDir names a file there, never a directory or a path out of
// it.
func (h *Handler) name(p string) (string, bool) {
	if p == Root {
		return "index.html", true
	}
	rest, ok := strings.CutPrefix(p, AssetsDir)
	if !ok || rest == "" || rest == "index.html" || strings.Contains(rest, "..") || strings.HasPrefix(rest, "/") {
		return "", false
	}
	return rest, true
}
