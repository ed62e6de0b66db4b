package kubeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// DiscoveryInterface is the part of client-go's discovery client
// singlecloud uses: the server's version, and an unversioned REST client
// for requests by absolute path (GET /version with a context).
type DiscoveryInterface interface {
	ServerVersion() (*version.Info, error)
	RESTClient() rest.Interface
}

// discoveryTimeout bounds a discovery request when the config sets no
// timeout: ServerVersion takes no context, so without it a silent server
// would hold the caller forever. It is client-go's discovery default.
const discoveryTimeout = 32 * time.Second

// DiscoveryClient is DiscoveryInterface over HTTP.
type DiscoveryClient struct {
	rc rest.Interface
}

// newDiscovery mirrors client-go's NewDiscoveryClientForConfigAndClient:
// no API path or group version, responses decoded as they come.
func newDiscovery(c *rest.Config, h *http.Client, s codecs) (*DiscoveryClient, error) {
	cfg := *c
	cfg.APIPath = ""
	cfg.GroupVersion = nil
	if cfg.Timeout == 0 {
		cfg.Timeout = discoveryTimeout
	}
	codec := runtime.NoopEncoder{Decoder: s.codecs.UniversalDecoder()}
	cfg.NegotiatedSerializer = serializer.NegotiatedSerializerWrapper(runtime.SerializerInfo{Serializer: codec})
	rc, err := rest.UnversionedRESTClientForConfigAndClient(&cfg, h)
	if err != nil {
		return nil, err
	}
	return &DiscoveryClient{rc: rc}, nil
}

// ServerVersion does GET /version, bounded only by the client's timeout
// (it takes no context, as client-go's does not; use RESTClient for one).
func (d *DiscoveryClient) ServerVersion() (*version.Info, error) {
	body, err := d.rc.Get().AbsPath("/version").Do(context.TODO()).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("parse the server version: %w", err)
	}
	return &info, nil
}

// RESTClient is the unversioned client requests by absolute path use.
func (d *DiscoveryClient) RESTClient() rest.Interface { return d.rc }
