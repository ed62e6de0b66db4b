package kubeconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// secret values planted in the test kubeconfigs; no error may show them.
const (
	secretToken    = "tok-3f9a1c-SECRET"
	secretPassword = "pw-77e1-SECRET"
)

// material is a CA and a client certificate it signed, in PEM.
type material struct {
	caPEM, certPEM, keyPEM []byte
}

func newMaterial(t testing.TB) material {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return material{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// base is a kubeconfig with two clusters and two users, as kubectl writes
// one: the current context uses the first cluster and a client
// certificate; the second user has a token.
func (m material) base() *clientcmdv1.Config {
	return &clientcmdv1.Config{
		APIVersion: "v1", Kind: "Config",
		Clusters: []clientcmdv1.NamedCluster{
			{Name: "prod", Cluster: clientcmdv1.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthorityData: m.caPEM}},
			{Name: "lab", Cluster: clientcmdv1.Cluster{Server: "https://lab.example:6443", InsecureSkipTLSVerify: true}},
		},
		AuthInfos: []clientcmdv1.NamedAuthInfo{
			{Name: "admin", AuthInfo: clientcmdv1.AuthInfo{ClientCertificateData: m.certPEM, ClientKeyData: m.keyPEM}},
			{Name: "robot", AuthInfo: clientcmdv1.AuthInfo{Token: secretToken}},
		},
		Contexts: []clientcmdv1.NamedContext{
			{Name: "admin@prod", Context: clientcmdv1.Context{Cluster: "prod", AuthInfo: "admin"}},
			{Name: "robot@lab", Context: clientcmdv1.Context{Cluster: "lab", AuthInfo: "robot"}},
		},
		CurrentContext: "admin@prod",
	}
}

// encode writes cfg as YAML, with an encoder.
func encode(t testing.TB, cfg *clientcmdv1.Config) []byte {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseAccepts(t *testing.T) {
	m := newMaterial(t)
	tests := []struct {
		name  string
		edit  func(*clientcmdv1.Config)
		check func(*testing.T, *rest.Config)
	}{
		{"client certificate", nil, func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://10.0.0.1:6443" || string(cfg.CAData) != string(m.caPEM) ||
				string(cfg.CertData) != string(m.certPEM) || string(cfg.KeyData) != string(m.keyPEM) {
				t.Errorf("config %+v does not carry the kubeconfig's server and material", cfg)
			}
			// The material is usable as it is: client-go builds its TLS
			// configuration from it.
			tc, err := rest.TLSConfigFor(cfg)
			if err != nil || tc == nil || tc.RootCAs == nil || tc.GetClientCertificate == nil {
				t.Fatalf("TLS config from the parsed kubeconfig: %v", err)
			}
			if cert, err := tc.GetClientCertificate(&tls.CertificateRequestInfo{}); err != nil || len(cert.Certificate) != 1 {
				t.Errorf("client certificate from the parsed kubeconfig: %v", err)
			}
		}},
		{"token in the other context", func(c *clientcmdv1.Config) { c.CurrentContext = "robot@lab" }, func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "https://lab.example:6443" || cfg.BearerToken != secretToken || !cfg.Insecure || cfg.CertData != nil {
				t.Errorf("config %+v, want the lab cluster with the robot's token", cfg)
			}
		}},
		{"only context, no current-context", func(c *clientcmdv1.Config) {
			c.Contexts = c.Contexts[1:]
			c.CurrentContext = ""
		}, func(t *testing.T, cfg *rest.Config) {
			if cfg.BearerToken != secretToken {
				t.Errorf("the only context was not used: %+v", cfg)
			}
		}},
		{"basic auth, impersonation, tls-server-name, http proxy", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{Username: "ann", Password: secretPassword, Impersonate: "bob", ImpersonateGroups: []string{"ops"}}
			c.Clusters[0].Cluster.TLSServerName = "kubernetes"
			c.Clusters[0].Cluster.ProxyURL = "http://proxy.example:3128"
		}, func(t *testing.T, cfg *rest.Config) {
			if cfg.Username != "ann" || cfg.Password != secretPassword || cfg.Impersonate.UserName != "bob" ||
				!slices.Equal(cfg.Impersonate.Groups, []string{"ops"}) || cfg.ServerName != "kubernetes" || cfg.Proxy == nil {
				t.Fatalf("config %+v lost a field", cfg)
			}
			req, _ := http.NewRequest(http.MethodGet, cfg.Host, nil)
			if u, err := cfg.Proxy(req); err != nil || u == nil || u.String() != "http://proxy.example:3128" {
				t.Errorf("proxy %v, %v", u, err)
			}
		}},
		{"socks5 proxy, plain http server with a path", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.ProxyURL = "socks5://127.0.0.1:1080"
			c.Clusters[0].Cluster.Server = "http://rancher.example/k8s/clusters/c-1"
		}, func(t *testing.T, cfg *rest.Config) {
			if cfg.Host != "http://rancher.example/k8s/clusters/c-1" || cfg.Proxy == nil {
				t.Errorf("config %+v", cfg)
			}
		}},
		{"extensions and preferences ignored", func(c *clientcmdv1.Config) {
			c.Preferences.Colors = true
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := m.base()
			if tt.edit != nil {
				tt.edit(raw)
			}
			cfg, err := Parse(encode(t, raw))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if f := localAccess(cfg); len(f) > 0 {
				t.Errorf("config sets %v", f)
			}
			if tt.check != nil {
				tt.check(t, cfg)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	m := newMaterial(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "pwned")
	// A readable file holding a token: Parse must refuse the path, not
	// read it (its content never shows up anywhere).
	tokenPath := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenPath, []byte("file-token-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	certPath := filepath.Join(dir, "client.crt")
	keyPath := filepath.Join(dir, "client.key")
	caPath := filepath.Join(dir, "ca.crt")
	for p, b := range map[string][]byte{certPath: m.certPEM, keyPath: m.keyPEM, caPath: m.caPEM} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	exec := &clientcmdv1.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "sh",
		Args: []string{"-c", "id > " + marker + "; echo '{}'"}, InteractiveMode: "Never"}

	tests := []struct {
		name   string
		edit   func(*clientcmdv1.Config)
		raw    string // used instead of base+edit when set
		fields []string
		reason string
	}{
		{"exec plugin running id", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{Exec: exec}
		}, "", []string{"kubeconfig.users[0].user.exec"}, reasonExec},
		{"exec plugin in a user no context uses", func(c *clientcmdv1.Config) {
			c.AuthInfos = append(c.AuthInfos, clientcmdv1.NamedAuthInfo{Name: "spare", AuthInfo: clientcmdv1.AuthInfo{Exec: exec}})
		}, "", []string{"kubeconfig.users[2].user.exec"}, reasonExec},
		{"tokenFile pointing at /etc/shadow", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{TokenFile: "/etc/shadow"}
		}, "", []string{"kubeconfig.users[0].user.tokenFile"}, "file paths are not allowed"},
		{"tokenFile pointing at a readable file", func(c *clientcmdv1.Config) {
			c.AuthInfos[1].AuthInfo = clientcmdv1.AuthInfo{TokenFile: tokenPath}
		}, "", []string{"kubeconfig.users[1].user.tokenFile"}, "embed the token"},
		{"client certificate and key paths", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{ClientCertificate: certPath, ClientKey: keyPath}
		}, "", []string{"kubeconfig.users[0].user.client-certificate", "kubeconfig.users[0].user.client-key"}, "client-certificate-data"},
		{"certificate-authority path", func(c *clientcmdv1.Config) {
			c.Clusters[1].Cluster.CertificateAuthority = caPath
		}, "", []string{"kubeconfig.clusters[1].cluster.certificate-authority"}, "certificate-authority-data"},
		{"auth provider", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{AuthProvider: &clientcmdv1.AuthProviderConfig{Name: "oidc",
				Config: map[string]string{"idp-issuer-url": "https://idp.example", "client-secret": "SECRET"}}}
		}, "", []string{"kubeconfig.users[0].user.auth-provider"}, reasonAuthProvider},
		{"server URL with a password", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.Server = "https://admin:" + secretPassword + "@10.0.0.1:6443"
		}, "", []string{"kubeconfig.clusters[0].cluster.server"}, "must not carry credentials"},
		{"server URL is a file", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.Server = "file:///etc/passwd"
		}, "", []string{"kubeconfig.clusters[0].cluster.server"}, "https://"},
		{"server without scheme", func(c *clientcmdv1.Config) {
			c.Clusters[1].Cluster.Server = "10.0.0.1:6443"
		}, "", []string{"kubeconfig.clusters[1].cluster.server"}, "https://"},
		{"server without host", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.Server = "https:///api"
		}, "", []string{"kubeconfig.clusters[0].cluster.server"}, "with a host"},
		{"server with a token in the query", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.Server = "https://10.0.0.1:6443/?token=" + secretToken
		}, "", []string{"kubeconfig.clusters[0].cluster.server"}, "query"},
		{"server missing", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.Server = ""
		}, "", []string{"kubeconfig.clusters[0].cluster.server"}, "is required"},
		{"proxy-url to a unix socket", func(c *clientcmdv1.Config) {
			c.Clusters[0].Cluster.ProxyURL = "unix:///var/run/docker.sock"
		}, "", []string{"kubeconfig.clusters[0].cluster.proxy-url"}, "socks5://"},
		{"every violation at once", func(c *clientcmdv1.Config) {
			c.AuthInfos[0].AuthInfo = clientcmdv1.AuthInfo{Exec: exec, TokenFile: "/etc/shadow"}
			c.AuthInfos[1].AuthInfo = clientcmdv1.AuthInfo{AuthProvider: &clientcmdv1.AuthProviderConfig{Name: "gcp"}}
			c.Clusters[0].Cluster.CertificateAuthority = caPath
		}, "", []string{"kubeconfig.clusters[0].cluster.certificate-authority", "kubeconfig.users[0].user.exec",
			"kubeconfig.users[0].user.tokenFile", "kubeconfig.users[1].user.auth-provider"}, "not allowed"},
		{"duplicate user name", func(c *clientcmdv1.Config) {
			c.AuthInfos[1].Name = "admin"
		}, "", []string{"kubeconfig.users[1].name"}, "users[0]"},
		{"current-context names nothing", func(c *clientcmdv1.Config) {
			c.CurrentContext = "gone"
		}, "", []string{"kubeconfig.current-context"}, "names no entry"},
		{"no current-context among two", func(c *clientcmdv1.Config) {
			c.CurrentContext = ""
		}, "", []string{"kubeconfig.current-context"}, "2 contexts"},
		{"context names a missing cluster and user", func(c *clientcmdv1.Config) {
			c.Contexts[0].Context = clientcmdv1.Context{Cluster: "nope", AuthInfo: "nobody"}
		}, "", []string{"kubeconfig.contexts[0].context.cluster", "kubeconfig.contexts[0].context.user"}, "names no entry"},
		{"no user in the context", func(c *clientcmdv1.Config) {
			c.Contexts[0].Context.AuthInfo = ""
		}, "", []string{"kubeconfig.contexts[0].context.user"}, "is required"},
		{"exec spelled with a capital", nil, `clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {Exec: {command: id, apiVersion: client.authentication.k8s.io/v1}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, []string{"kubeconfig.users[0].user.exec"}, reasonExec},
		{"invalid YAML quoting a secret", nil, "users:\n- name: u\n  user:\n    token: [" + secretToken + "\n", []string{"kubeconfig"}, "is not valid YAML (line"},
		{"not a mapping", nil, "not yaml at all " + secretToken, []string{"kubeconfig"}, "is not a kubeconfig"},
		{"wrong type", nil, "clusters: " + secretToken + "\n", []string{"kubeconfig"}, "clusters has the wrong type"},
		{"bad base64", nil, "clusters: [{name: c, cluster: {server: \"https://h\", certificate-authority-data: \"%%" + secretToken + "\"}}]\n", []string{"kubeconfig"}, "not base64"},
		{"duplicate key hiding an exec plugin", nil, `clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users:
- name: u
  user: {token: t}
  user: {exec: {command: id}}
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, []string{"kubeconfig.users[0].user", "kubeconfig.users[0].user.exec"}, reasonExec},
		{"empty", nil, " \n", []string{"kubeconfig"}, "is required"},
		{"too large", nil, "# " + strings.Repeat("x", MaxSize), []string{"kubeconfig"}, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.raw == "" {
				raw := m.base()
				tt.edit(raw)
				data = encode(t, raw)
			}
			cfg, err := Parse(data)
			if cfg != nil {
				t.Errorf("Parse returned a config %+v with the error", cfg)
			}
			var errs Errors
			if !errors.As(err, &errs) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse: %v, want Errors matching ErrInvalid", err)
			}
			var fields []string
			for _, fe := range errs {
				fields = append(fields, fe.Field)
			}
			slices.Sort(fields)
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields %q, want %q (%v)", fields, tt.fields, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not say %q", err, tt.reason)
			}
			for _, s := range []string{"SECRET", "/etc/shadow", dir, "x > "} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes the kubeconfig (%q)", err, s)
				}
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the exec plugin ran: marker %v", err)
			}
		})
	}
}
