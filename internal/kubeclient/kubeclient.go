// Package kubeclient is singlecloud's typed Kubernetes client: the API
// groups it uses (core/v1, apps/v1, rbac/v1, policy/v1, authorization/v1)
// and GET /version, and nothing else.
//
// It exists for memory: client-go's clientset (k8s.io/client-go/kubernetes)
// links and registers every built-in API group at start (its scheme package
// has ~55 k8s.io/api packages), which costs the server about 10 MB of RSS
// before it serves anything. This package builds its own scheme of only the
// groups above, on first use, and reuses client-go's generic typed clients
// (k8s.io/client-go/gentype), so on the wire it behaves as the clientset
// did: the same paths, parameters, content types and rate limiting.
//
// Its interfaces declare only the methods singlecloud calls, with client-go's
// signatures, so client-go's typed clients (and its fake clientset, through
// kubeclienttest) satisfy them too.
package kubeclient

import (
	"fmt"
	"net/http"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is what singlecloud does with a cluster's API server; the
// counterpart of client-go's kubernetes.Interface.
type Interface interface {
	CoreV1() CoreV1Interface
	AppsV1() AppsV1Interface
	RbacV1() RbacV1Interface
	PolicyV1() PolicyV1Interface
	AuthorizationV1() AuthorizationV1Interface
	Discovery() DiscoveryInterface
}

// Clientset is the Interface over HTTP. Its clients share one
// *http.Client (one connection pool) and one rate limiter, as client-go's
// clientset's do.
type Clientset struct {
	core      *CoreV1Client
	apps      *AppsV1Client
	rbac      *RbacV1Client
	policy    *PolicyV1Client
	authz     *AuthorizationV1Client
	discovery *DiscoveryClient
}

var _ Interface = (*Clientset)(nil)

// NewForConfig is a Clientset for the API server c describes. It makes no
// request. Like client-go's kubernetes.NewForConfig it defaults the user
// agent and, when c has QPS but no RateLimiter, gives all groups one token
// bucket of c.QPS and c.Burst.
func NewForConfig(c *rest.Config) (Interface, error) {
	cfg := *c
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	h, err := rest.HTTPClientFor(&cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	cs, err := NewForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// NewForConfigAndClient is NewForConfig with the given HTTP client, which
// takes precedence over c's transport settings.
func NewForConfigAndClient(c *rest.Config, h *http.Client) (*Clientset, error) {
	cfg := *c
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("kubernetes client for %s: burst must be greater than 0 when QPS is set and RateLimiter is not", cfg.Host)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	s, err := shared()
	if err != nil {
		return nil, err
	}
	// As client-go's generated clients do: the codecs, unless client-side
	// CBOR is enabled by its feature gate.
	ns := rest.CodecFactoryForGeneratedClient(s.scheme, s.codecs).WithoutConversion()

	var cs Clientset
	groups := []struct {
		gv      schema.GroupVersion
		apiPath string
		set     func(rest.Interface)
	}{
		{corev1.SchemeGroupVersion, "/api", func(rc rest.Interface) { cs.core = &CoreV1Client{rc, s.params} }},
		{appsv1.SchemeGroupVersion, "/apis", func(rc rest.Interface) { cs.apps = &AppsV1Client{rc, s.params} }},
		{rbacv1.SchemeGroupVersion, "/apis", func(rc rest.Interface) { cs.rbac = &RbacV1Client{rc, s.params} }},
		{policyv1.SchemeGroupVersion, "/apis", func(rc rest.Interface) { cs.policy = &PolicyV1Client{rc, s.params} }},
		{authorizationv1.SchemeGroupVersion, "/apis", func(rc rest.Interface) { cs.authz = &AuthorizationV1Client{rc, s.params} }},
	}
	for _, g := range groups {
		gcfg := cfg
		gv := g.gv
		gcfg.GroupVersion = &gv
		gcfg.APIPath = g.apiPath
		gcfg.NegotiatedSerializer = ns
		rc, err := rest.RESTClientForConfigAndClient(&gcfg, h)
		if err != nil {
			return nil, fmt.Errorf("kubernetes client of %s for %s: %w", gv, cfg.Host, err)
		}
		g.set(rc)
	}
	d, err := newDiscovery(&cfg, h, s)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery client for %s: %w", cfg.Host, err)
	}
	cs.discovery = d
	return &cs, nil
}

// CoreV1 is the client of the core group.
func (c *Clientset) CoreV1() CoreV1Interface { return c.core }

// AppsV1 is the client of apps/v1.
func (c *Clientset) AppsV1() AppsV1Interface { return c.apps }

// RbacV1 is the client of rbac.authorization.k8s.io/v1.
func (c *Clientset) RbacV1() RbacV1Interface { return c.rbac }

// PolicyV1 is the client of policy/v1.
func (c *Clientset) PolicyV1() PolicyV1Interface { return c.policy }

// AuthorizationV1 is the client of authorization.k8s.io/v1.
func (c *Clientset) AuthorizationV1() AuthorizationV1Interface { return c.authz }

// Discovery reads the server's version and serves raw-path requests.
func (c *Clientset) Discovery() DiscoveryInterface { return c.discovery }

// codecs is the scheme of the groups and what encodes and decodes
// with it. It is never changed after newCodecs returns.
type codecs struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

// shared builds the codecs on first use and returns the same value after.
// It is package-level so that a server holding clients for thousands of
// clusters builds the scheme once (as client-go's clientset shares its
// scheme.Scheme) rather than once per client; it is immutable, and unlike
// client-go's it is built on first use rather than when the package is
// initialised.
var shared = sync.OnceValues(newCodecs)

// newCodecs registers the meta types (options, Status) and the groups
// above, as client-go's kubernetes/scheme does for all groups.
func newCodecs() (codecs, error) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, policyv1.AddToScheme, authorizationv1.AddToScheme,
	} {
		// Fails only for a programming error (a type registered twice
		// under different names), never for an input.
		if err := add(s); err != nil {
			return codecs{}, fmt.Errorf("kubeclient: build the scheme: %w", err)
		}
	}
	return codecs{scheme: s, codecs: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}, nil
}
