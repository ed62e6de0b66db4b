package clustermanager

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// apiServer is a loopback HTTPS server that answers the few Kubernetes
// API paths the manager uses, so unit tests can steer its answers
// (healthy, 401, 503, down). Real kube-apiservers are used in test/e2e.
type apiServer struct {
	srv   *httptest.Server
	token string
	mode  atomic.Int32 // 0 ok, 1 readyz fails, 2 everything 503
	hits  atomic.Int64
}

const (
	modeOK = iota
	modeNotReady
	modeDown
)

func newAPIServer(t testing.TB, token string) *apiServer {
	a := &apiServer{token: token}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	return a
}

// newAPIServerAt starts the server on a given listener address, for tests
// that make a cluster come up after it was imported.
func newAPIServerAt(t testing.TB, addr, token string) *apiServer {
	a := &apiServer{token: token}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	a.srv.Listener.Close()
	a.srv.Listener = l
	a.srv.StartTLS()
	t.Cleanup(a.srv.Close)
	return a
}

func (a *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	a.hits.Add(1)
	if r.Header.Get("Authorization") != "Bearer "+a.token {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`)
		return
	}
	if a.mode.Load() == modeDown {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/version":
		fmt.Fprint(w, `{"major":"1","minor":"36","gitVersion":"v1.36.3"}`)
	case "/readyz":
		if a.mode.Load() == modeNotReady {
			http.Error(w, "not ready", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	case "/api/v1/nodes":
		fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"n1"}},{"metadata":{"name":"n2"}}]}`)
	default:
		http.NotFound(w, r)
	}
}

// caPEM is the server certificate in PEM, usable as the kubeconfig's CA.
func (a *apiServer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.srv.Certificate().Raw})
}

// kubeconfig returns a kubeconfig for server url with the given CA and token.
func kubeconfig(url string, ca []byte, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`, url, base64.StdEncoding.EncodeToString(ca), token)
}

func (a *apiServer) kubeconfig() string { return kubeconfig(a.srv.URL, a.caPEM(), a.token) }

// otherCA returns a self-signed CA certificate that signed nothing the test
// servers present.
func otherCA(t testing.TB) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "some other CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
