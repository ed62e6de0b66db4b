// Package kubeconfig turns a kubeconfig that a user handed to the API into
// a client configuration without letting it act on the singlecloud host.
//
// client-go's own loaders honour everything a kubeconfig may say: exec
// plugins (a command run on this host), auth providers, tokenFile and
// certificate or key file paths (files read from this host and sent to the
// server the kubeconfig names). Parse accepts only inline material — the
// *-data fields, token, username/password — refuses every plugin and file
// path in every cluster and user of the file (not only the current
// context's) with a FieldError naming it, and builds the *rest.Config
// itself from the checked fields, so no exec, auth provider or file field
// can ever be set on what it returns.
//
// Decisions beyond that allowlist:
//   - Impersonation (as, as-uid, as-groups, as-user-extra) is accepted: it
//     is a request to the target API server, which authorises it; nothing
//     happens on this host.
//   - proxy-url is accepted with an http, https or socks5 scheme only: it
//     changes the route to the API server, which the server URL already
//     lets the user choose, and needs no plugin or file. It may carry proxy
//     credentials (a kubeconfig has no other place for them); RedactURL
//     removes them wherever a URL is shown.
//   - Credentials in the server URL (https://user:pass@host) are refused:
//     the kubeconfig has proper fields for them, and a URL is printed in
//     errors and logs.
//   - Extensions and preferences are ignored.
//
// Errors never quote the kubeconfig: a YAML syntax error is reported by its
// line number only, since parser messages echo the offending text.
package kubeconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/yaml"
)

// MaxSize bounds the kubeconfig Parse reads. Real ones are a few KB even
// with many contexts; the bound keeps YAML decoding cheap.
const MaxSize = 1 << 20

// root is the path of the kubeconfig in API requests; every FieldError
// starts with it.
const root = "kubeconfig"

// Parse checks a kubeconfig and returns the client configuration of its
// current context (the only context when current-context is empty). On
// any violation it returns Errors holding all of them and a nil config;
// a key set twice, which the decoder would resolve silently, is one
// (checkKeys).
// The result never has an exec or auth provider, a token file or a
// certificate, key or CA file path. Parse does no I/O.
func Parse(data []byte) (*rest.Config, error) {
	raw, err := decode(data)
	if err != nil {
		return nil, err
	}
	var c collector
	checkKeys(&c, data)
	checkClusters(&c, raw.Clusters)
	checkUsers(&c, raw.AuthInfos)
	checkNames(&c, "contexts", len(raw.Contexts), func(i int) string { return raw.Contexts[i].Name })
	cl, user := resolve(&c, raw)
	if err := c.err(); err != nil {
		return nil, err
	}
	cfg, err := build(cl, user)
	if err != nil {
		return nil, err
	}
	if fields := localAccess(cfg); len(fields) > 0 {
		// Unreachable: build sets none of these. Kept so that a future
		// edit of build cannot silently reopen the hole.
		return nil, fmt.Errorf("kubeconfig: internal error: client config would read local files or run plugins (%v)", fields)
	}
	return cfg, nil
}

// decode parses the YAML (or JSON) into the versioned kubeconfig types,
// whose lists keep the file's order for the error paths.
func decode(data []byte) (*clientcmdv1.Config, error) {
	if len(data) > MaxSize {
		return nil, Errors{{Field: root, Reason: fmt.Sprintf("is %d bytes, more than the %d a kubeconfig may have; export only the context to import (kubectl config view --minify --raw)", len(data), MaxSize)}}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, Errors{{Field: root, Reason: "is required: paste the admin kubeconfig of the cluster to import"}}
	}
	var cfg clientcmdv1.Config
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, Errors{{Field: root, Reason: describeDecodeError(err)}}
	}
	return &cfg, nil
}

// yamlLine finds the line number in a YAML parser message. The message
// itself is never shown: it may quote the input.
var yamlLine = regexp.MustCompile(`line ([0-9]{1,9})`)

// safeFieldPath is what a JSON field path may look like to be shown.
var safeFieldPath = regexp.MustCompile(`^[A-Za-z0-9.-]{1,100}$`)

// describeDecodeError turns a decoding failure into a fixed message that
// quotes nothing from the input. The YAML library reports syntax errors
// only as text, so its line number is read here, where the error enters.
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &typeErr) && safeFieldPath.MatchString(typeErr.Field):
		return fmt.Sprintf("is not a valid kubeconfig: %s has the wrong type; paste the kubeconfig file unchanged", typeErr.Field)
	case errors.As(err, &typeErr):
		return "is not a kubeconfig: expected a YAML mapping with clusters, users, contexts and current-context"
	case errors.As(err, &b64):
		return "is not a valid kubeconfig: a *-data field is not base64; embed certificates and keys base64-encoded, as kubectl config view --raw prints them"
	}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("is not valid YAML (line %s); paste the kubeconfig file unchanged", m[1])
	}
	return "is not valid YAML; paste the kubeconfig file unchanged"
}

// build makes the client configuration from checked fields only.
func build(cl *clientcmdv1.Cluster, user *clientcmdv1.AuthInfo) (*rest.Config, error) {
	cfg := &rest.Config{
		Host: cl.Server,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cl.InsecureSkipTLSVerify,
			ServerName: cl.TLSServerName,
			CAData:     cl.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken: user.Token,
		Username:    user.Username,
		Password:    user.Password,
		Impersonate: rest.ImpersonationConfig{
			UserName: user.Impersonate,
			UID:      user.ImpersonateUID,
			Groups:   user.ImpersonateGroups,
			Extra:    user.ImpersonateUserExtra,
		},
		DisableCompression: cl.DisableCompression,
	}
	if cl.ProxyURL != "" {
		u, err := parseProxyURL(cl.ProxyURL)
		if err != nil {
			return nil, err // checked before; kept for the invariant
		}
		cfg.Proxy = http.ProxyURL(u)
	}
	return cfg, nil
}

// localAccess names the fields of cfg that would make client-go run a
// plugin or read a file on this host; Parse's result has none.
func localAccess(cfg *rest.Config) []string {
	var fields []string
	if cfg.ExecProvider != nil {
		fields = append(fields, "ExecProvider")
	}
	if cfg.AuthProvider != nil {
		fields = append(fields, "AuthProvider")
	}
	if cfg.AuthConfigPersister != nil {
		fields = append(fields, "AuthConfigPersister")
	}
	if cfg.BearerTokenFile != "" {
		fields = append(fields, "BearerTokenFile")
	}
	if cfg.CAFile != "" {
		fields = append(fields, "CAFile")
	}
	if cfg.CertFile != "" {
		fields = append(fields, "CertFile")
	}
	if cfg.KeyFile != "" {
		fields = append(fields, "KeyFile")
	}
	return fields
}
