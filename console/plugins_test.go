package console

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/validation"
)

// TestOffersTheNetworkPluginsValidationAccepts: the cluster form's plugin
// select lists exactly what validation accepts, so that the console never
// offers a plugin the API refuses.
func TestOffersTheNetworkPluginsValidationAccepts(t *testing.T) {
	js, err := assets.ReadFile("assets/clusterform.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^const NETWORK_PLUGINS = \[([^\]]*)\];`).FindSubmatch(js)
	if m == nil {
		t.Fatal("clusterform.js has no NETWORK_PLUGINS list")
	}
	var offered []string
	for _, item := range strings.Split(string(m[1]), ",") {
		if item = strings.Trim(strings.TrimSpace(item), `'"`); item != "" {
			offered = append(offered, item)
		}
	}
	if want := validation.NetworkPlugins(); !slices.Equal(offered, want) {
		t.Errorf("the console offers %q, validation accepts %q", offered, want)
	}
	if !strings.Contains(string(js), "NETWORK_PLUGINS.map(") {
		t.Error("the plugin select is not built from NETWORK_PLUGINS")
	}
}
