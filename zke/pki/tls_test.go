package pki

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clientTimeout bounds every request of these tests.
const clientTimeout = 10 * time.Second

// whoami serves over mutual TLS with the serving certificate server,
// accepting clients of caPEM, and answers with the client's CN and groups.
func whoami(t *testing.T, server Cert, caPEM string) *httptest.Server {
	t.Helper()
	pair, err := server.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := CertPool(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0].Subject
		fmt.Fprintf(w, "%s %s", peer.CommonName, strings.Join(peer.Organization, ","))
	}))
	srv.TLS = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the failing cases are asserted by the client
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// get fetches url with the client TLS config and returns the body.
func get(t *testing.T, cfg *tls.Config, url string) (string, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: clientTimeout}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestClientTLSConfigOverLoopback(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	apiserver := whoami(t, b.Certs[NodeID(KindAPIServer, "n1")], b.ClusterCA.Cert)
	// etcd on n2, reached through a tunnel: the dialled address is
	// loopback, the name checked is the node's.
	etcd := whoami(t, b.Certs[NodeID(KindEtcdServer, "n2")], b.EtcdCA.Cert)
	cases := []struct {
		name       string
		srv        *httptest.Server
		client     ID
		ca         string
		serverName string
		want       string // "" means the handshake must fail
	}{
		{"admin to apiserver", apiserver, ID(KindAdmin), b.ClusterCA.Cert, "127.0.0.1", "kube-admin "},
		{"super admin to apiserver", apiserver, ID(KindSuperAdmin), b.ClusterCA.Cert, "127.0.0.1", "kube-super-admin system:masters"},
		{"kubelet client via service name", apiserver, NodeID(KindKubelet, "n3"), b.ClusterCA.Cert,
			"kubernetes.default.svc.cluster.local", "system:node:n3 system:nodes"},
		{"scheduler via node address", apiserver, ID(KindScheduler), b.ClusterCA.Cert, "10.0.0.1", "system:kube-scheduler "},
		{"apiserver to etcd", etcd, ID(KindAPIServerEtcdClient), b.EtcdCA.Cert, "10.0.0.2", "kube-apiserver-etcd-client "},
		{"etcd peer to etcd", etcd, NodeID(KindEtcdPeer, "n1"), b.EtcdCA.Cert, "n2", "n1 "},
		{"etcd client to apiserver", apiserver, ID(KindAPIServerEtcdClient), b.ClusterCA.Cert, "127.0.0.1", ""},
		{"admin to etcd", etcd, ID(KindAdmin), b.EtcdCA.Cert, "10.0.0.2", ""},
		{"wrong CA trusted", apiserver, ID(KindAdmin), b.EtcdCA.Cert, "127.0.0.1", ""},
		{"name not in SANs", apiserver, ID(KindAdmin), b.ClusterCA.Cert, "10.0.0.2", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ClientTLSConfig(b.Certs[tc.client], tc.ca, tc.serverName)
			if err != nil {
				t.Fatal(err)
			}
			got, err := get(t, cfg, tc.srv.URL)
			switch {
			case tc.want == "" && err == nil:
				t.Fatalf("request succeeded (%q); want a TLS failure", got)
			case tc.want != "" && err != nil:
				t.Fatalf("request failed: %v", err)
			case got != tc.want:
				t.Fatalf("server saw %q, want %q", got, tc.want)
			}
		})
	}
}

func TestKubeconfigWorksWithClientGo(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	apiserver := whoami(t, b.Certs[NodeID(KindAPIServer, "n1")], b.ClusterCA.Cert)
	cases := []struct {
		id   ID
		want string
	}{
		{ID(KindAdmin), "kube-admin "},
		{ID(KindSuperAdmin), "kube-super-admin system:masters"},
		{ID(KindControllerManager), "system:kube-controller-manager "},
		{ID(KindScheduler), "system:kube-scheduler "},
		{ID(KindKubeProxy), "system:kube-proxy "},
		{NodeID(KindKubelet, "n2"), "system:node:n2 system:nodes"},
	}
	for _, tc := range cases {
		t.Run(string(tc.id), func(t *testing.T) {
			data, err := KubeconfigFor(b.Certs[tc.id], b.ClusterCA.Cert, apiserver.URL, "c1")
			if err != nil {
				t.Fatal(err)
			}
			raw, err := clientcmd.Load(data)
			if err != nil {
				t.Fatalf("kubeconfig does not parse: %v", err)
			}
			user := strings.Fields(tc.want)[0]
			if raw.CurrentContext != user+"@c1" || raw.Contexts[raw.CurrentContext].AuthInfo != user {
				t.Fatalf("current context %q, contexts %v", raw.CurrentContext, raw.Contexts)
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Timeout = clientTimeout
			client, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer client.CloseIdleConnections()
			resp, err := client.Get(apiserver.URL)
			if err != nil {
				t.Fatalf("request with the kubeconfig: %v", err)
			}
			defer resp.Body.Close()
			if body, _ := io.ReadAll(resp.Body); string(body) != tc.want {
				t.Fatalf("server saw %q, want %q", body, tc.want)
			}
		})
	}
}

func TestHelperArgumentErrors(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	admin := b.Certs[ID(KindAdmin)]
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"kubeconfig without server", func() error { _, err := KubeconfigFor(admin, b.ClusterCA.Cert, "", "c1"); return err }, ErrInvalidInput},
		{"kubeconfig without CA", func() error { _, err := KubeconfigFor(admin, "", "https://x", "c1"); return err }, ErrInvalidInput},
		{"pool of nothing", func() error { _, err := CertPool("not pem"); return err }, ErrInvalidInput},
		{"TLS config without CA", func() error { _, err := ClientTLSConfig(admin, "", "x"); return err }, ErrInvalidInput},
		{"missing certificate", func() error { _, err := b.Get(NodeID(KindKubelet, "nobody")); return err }, ErrMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := ClientTLSConfig(Cert{Cert: admin.Cert, Key: "x"}, b.ClusterCA.Cert, "x"); err == nil {
		t.Fatal("ClientTLSConfig accepted a certificate without its key")
	}
	if _, err := KubeconfigFor(Cert{Cert: "x"}, b.ClusterCA.Cert, "https://x", "c1"); err == nil {
		t.Fatal("KubeconfigFor accepted a non-PEM certificate")
	}
}
