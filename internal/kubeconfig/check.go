package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"

	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

// Reasons shared by several fields.
const (
	reasonExec         = "exec plugins are not allowed; embed a token or client certificate"
	reasonAuthProvider = "auth provider plugins are not allowed; embed a token or client certificate"
	reasonServerURL    = "must be an https:// (or http://) URL with a host, like https://10.0.0.1:6443"
)

// errBadProxyURL is what parseProxyURL returns; the checks report it as a
// FieldError.
var errBadProxyURL = errors.New("proxy-url must be an http://, https:// or socks5:// URL with a host and no query")

// checkClusters refuses file paths and unusable URLs in every cluster.
func checkClusters(c *collector, clusters []clientcmdv1.NamedCluster) {
	checkNames(c, "clusters", len(clusters), func(i int) string { return clusters[i].Name })
	for i, nc := range clusters {
		p := fmt.Sprintf("%s.clusters[%d].cluster", root, i)
		cl := nc.Cluster
		checkServerURL(c, p+".server", cl.Server)
		if cl.CertificateAuthority != "" {
			c.add(p+".certificate-authority", "file paths are not allowed; embed the CA as certificate-authority-data (kubectl config view --raw --flatten)")
		}
		if cl.ProxyURL != "" {
			if _, err := parseProxyURL(cl.ProxyURL); err != nil {
				c.add(p+".proxy-url", "must be an http://, https:// or socks5:// URL with a host and no query or fragment")
			}
		}
	}
}

// checkUsers refuses plugins and file paths in every user.
func checkUsers(c *collector, users []clientcmdv1.NamedAuthInfo) {
	checkNames(c, "users", len(users), func(i int) string { return users[i].Name })
	for i, nu := range users {
		p := fmt.Sprintf("%s.users[%d].user", root, i)
		u := nu.AuthInfo
		if u.Exec != nil {
			c.add(p+".exec", reasonExec)
		}
		if u.AuthProvider != nil {
			c.add(p+".auth-provider", reasonAuthProvider)
		}
		if u.TokenFile != "" {
			c.add(p+".tokenFile", "file paths are not allowed; embed the token as token")
		}
		if u.ClientCertificate != "" {
			c.add(p+".client-certificate", "file paths are not allowed; embed the certificate as client-certificate-data (kubectl config view --raw --flatten)")
		}
		if u.ClientKey != "" {
			c.add(p+".client-key", "file paths are not allowed; embed the key as client-key-data (kubectl config view --raw --flatten)")
		}
	}
}

// checkNames refuses a name used twice in one list: a context naming it
// would be ambiguous.
func checkNames(c *collector, list string, n int, name func(int) string) {
	first := make(map[string]int, n)
	for i := 0; i < n; i++ {
		nm := name(i)
		if j, dup := first[nm]; dup {
			c.add(fmt.Sprintf("%s.%s[%d].name", root, list, i), fmt.Sprintf("is also the name of %s[%d]; give each entry its own name", list, j))
			continue
		}
		first[nm] = i
	}
}

// checkServerURL accepts an absolute http(s) URL with a host and no
// credentials, query or fragment. The reason never repeats the URL.
func checkServerURL(c *collector, field, server string) {
	if server == "" {
		c.add(field, "is required: the https:// address of the cluster's API server")
		return
	}
	u, err := url.Parse(server)
	switch {
	case err != nil, u.Scheme != "https" && u.Scheme != "http", u.Host == "", u.Hostname() == "":
		c.add(field, reasonServerURL)
	case u.User != nil:
		c.add(field, "must not carry credentials (user:password@); put them in the user's token or username and password")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		c.add(field, "must not have a query or fragment; use the API server's base URL, like https://10.0.0.1:6443")
	}
}

// parseProxyURL accepts an absolute http, https or socks5 URL with a host
// and no query or fragment.
func parseProxyURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errBadProxyURL
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5",
		u.Host == "", u.Hostname() == "",
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, errBadProxyURL
	}
	return u, nil
}

// resolve finds the cluster and user of the current context, reporting
// what is missing. Names are not quoted in reasons: list positions say
// which entry is meant.
func resolve(c *collector, raw *clientcmdv1.Config) (*clientcmdv1.Cluster, *clientcmdv1.AuthInfo) {
	ci := -1
	switch {
	case raw.CurrentContext != "":
		for i := range raw.Contexts {
			if raw.Contexts[i].Name == raw.CurrentContext {
				ci = i
				break
			}
		}
		if ci < 0 {
			c.add(root+".current-context", "names no entry of contexts; set it to the name of the context to import")
			return nil, nil
		}
	case len(raw.Contexts) == 1:
		ci = 0
	default:
		c.add(root+".current-context", fmt.Sprintf("is required: the file has %d contexts; set current-context to the one to import", len(raw.Contexts)))
		return nil, nil
	}
	ctx := raw.Contexts[ci].Context
	p := fmt.Sprintf("%s.contexts[%d].context", root, ci)
	var cl *clientcmdv1.Cluster
	var user *clientcmdv1.AuthInfo
	if ctx.Cluster == "" {
		c.add(p+".cluster", "is required: name the entry of clusters to connect to")
	} else if cl = findCluster(raw.Clusters, ctx.Cluster); cl == nil {
		c.add(p+".cluster", "names no entry of clusters")
	}
	if ctx.AuthInfo == "" {
		c.add(p+".user", "is required: name the entry of users to authenticate as")
	} else if user = findUser(raw.AuthInfos, ctx.AuthInfo); user == nil {
		c.add(p+".user", "names no entry of users")
	}
	return cl, user
}

func findCluster(list []clientcmdv1.NamedCluster, name string) *clientcmdv1.Cluster {
	for i := range list {
		if list[i].Name == name {
			return &list[i].Cluster
		}
	}
	return nil
}

func findUser(list []clientcmdv1.NamedAuthInfo, name string) *clientcmdv1.AuthInfo {
	for i := range list {
		if list[i].Name == name {
			return &list[i].AuthInfo
		}
	}
	return nil
}
