package runtime_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// registry is a minimal Docker registry (v2 API, schema 2 manifests,
// HTTP basic auth) serving one image read from a docker-archive, so that
// Pull is tested against a real dockerd without a network. It listens on
// the hosts' gateway address, in the test's namespace, with a certificate
// the host's dockerd trusts through /etc/docker/certs.d.
type registry struct {
	addr       string
	user, pass string
	manifest   []byte
	blobs      map[string][]byte // digest → content

	mu    sync.Mutex
	users []string // users of the authenticated requests
}

// startRegistry serves the single image of archive as repo:tag.
func startRegistry(t *testing.T, h *testbed.Host, archive, repo, tag, user, pass string) *registry {
	t.Helper()
	r := &registry{user: user, pass: pass, blobs: map[string][]byte{}}
	r.load(t, archive)
	cert, certPEM := selfSigned(t, h.Gateway)
	l, err := net.Listen("tcp", net.JoinHostPort(h.Gateway, "0"))
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	if err := h.WriteFile("/etc/docker/certs.d/"+r.addr+"/ca.crt", certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/", func(w http.ResponseWriter, req *http.Request) { r.serve(w, req, repo, tag) })
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeTLS(l, "", "")
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return r
}

// load reads the archive's config and layers; layers are served
// gzip-compressed, as registries do.
func (r *registry) load(t *testing.T, archive string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if files[path.Clean(hdr.Name)], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	var man []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil || len(man) != 1 {
		t.Fatalf("%s: manifest.json: %v", archive, err)
	}
	type descriptor struct {
		MediaType string `json:"mediaType"`
		Size      int    `json:"size"`
		Digest    string `json:"digest"`
	}
	add := func(mediaType string, data []byte) descriptor {
		d := digest(data)
		r.blobs[d] = data
		return descriptor{MediaType: mediaType, Size: len(data), Digest: d}
	}
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: "application/vnd.docker.distribution.manifest.v2+json",
		Config: add("application/vnd.docker.container.image.v1+json", files[man[0].Config])}
	for _, l := range man[0].Layers {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(files[path.Clean(l)])
		zw.Close()
		m.Layers = append(m.Layers, add("application/vnd.docker.image.rootfs.diff.tar.gzip", gz.Bytes()))
	}
	if r.manifest, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
}

func (r *registry) serve(w http.ResponseWriter, req *http.Request, repo, tag string) {
	user, pass, ok := req.BasicAuth()
	if !ok || user != r.user || pass != r.pass {
		w.Header().Set("WWW-Authenticate", `Basic realm="zke-test"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
		return
	}
	r.mu.Lock()
	r.users = append(r.users, user)
	r.mu.Unlock()
	p := req.URL.Path
	switch {
	case p == "/v2/":
		w.Write([]byte("{}"))
	case p == "/v2/"+repo+"/manifests/"+tag || p == "/v2/"+repo+"/manifests/"+digest(r.manifest):
		w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
		w.Header().Set("Docker-Content-Digest", digest(r.manifest))
		w.Header().Set("Content-Length", fmt.Sprint(len(r.manifest)))
		if req.Method != http.MethodHead {
			w.Write(r.manifest)
		}
	case strings.HasPrefix(p, "/v2/"+repo+"/blobs/"):
		blob, ok := r.blobs[strings.TrimPrefix(p, "/v2/"+repo+"/blobs/")]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		w.Write(blob)
	default:
		http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
	}
}

// authenticatedUsers returns the users of the authenticated requests.
func (r *registry) authenticatedUsers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.users...)
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// selfSigned makes a certificate for ip that is its own CA.
func selfSigned(t *testing.T, ip string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zke test registry"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
