package validation

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Bounds of an application spec: what reaches a Deployment, a Docker argv
// or a container name stays small and plain.
const (
	maxAppNameLen       = 40
	maxAppVersionLen    = 20
	maxAppDeployments   = 10
	maxAppReplicas      = 1000
	maxAppWords         = 64
	maxAppWordBytes     = 4096
	maxAppEnv           = 100
	maxAppPorts         = 20
	minInstallTimeout   = 10
	maxInstallTimeout   = 3600
	percentTolerance    = 1e-9
	imageExampleForApps = "busybox:1.36 or registry.example.com/team/web:v2"
)

// ValidateApplication checks an application's name and the spec applied
// to it. Every violation names its field.
func ValidateApplication(name string, s model.ApplicationSpec) error {
	var c collector
	if p := labelProblem(name); p != "" {
		c.addf("name", "%s (an application name is a DNS-1123 label)", p)
	} else if len(name) > maxAppNameLen {
		c.addf("name", "%q is %d characters long; an application name has at most %d (its objects are named <name>-<version>)", name, len(name), maxAppNameLen)
	}
	if p := appVersionProblem(s.Version); p != "" {
		c.addf("version", "%s", p)
	}
	if s.Namespace != "" {
		if p := labelProblem(s.Namespace); p != "" {
			c.addf("namespace", "%s (a namespace is a DNS-1123 label)", p)
		}
	}
	if s.Replicas < 0 || s.Replicas > maxAppReplicas {
		c.addf("replicas", "%d is not between 0 and %d", s.Replicas, maxAppReplicas)
	}
	if t := s.InstallTimeoutSeconds; t != 0 && (t < minInstallTimeout || t > maxInstallTimeout) {
		c.addf("installTimeoutSeconds", "%d is not between %d and %d (0 means 300)", t, minInstallTimeout, maxInstallTimeout)
	}
	switch {
	case len(s.Deployments) == 0:
		c.addf("deployments", "is empty: give at least one version with its image")
	case len(s.Deployments) > maxAppDeployments:
		c.addf("deployments", "has %d versions, more than %d", len(s.Deployments), maxAppDeployments)
	}
	slugs := map[string]string{}
	percent := 0.0
	for i, d := range s.Deployments {
		f := index("deployments", i)
		if p := appVersionProblem(d.Version); p != "" {
			c.addf(f+".version", "%s", p)
		} else if prev, dup := slugs[AppSlug(d.Version)]; dup {
			c.addf(f+".version", "%q names the same objects as %q; give versions distinct names", d.Version, prev)
		} else {
			slugs[AppSlug(d.Version)] = d.Version
		}
		if p := imageRefProblem(d.Image, imageExampleForApps); p != "" {
			c.addf(f+".image", "%s", p)
		}
		switch {
		case d.Replicas != nil && d.Percent != nil:
			c.addf(f, "gives both replicas and percent; give one")
		case d.Replicas == nil && d.Percent == nil:
			c.addf(f, "gives neither replicas nor percent; give one")
		case d.Replicas != nil && (*d.Replicas < 0 || *d.Replicas > maxAppReplicas):
			c.addf(f+".replicas", "%d is not between 0 and %d", *d.Replicas, maxAppReplicas)
		case d.Percent != nil && (math.IsNaN(*d.Percent) || *d.Percent < 0 || *d.Percent > 100):
			c.addf(f+".percent", "%v is not between 0 and 100", *d.Percent)
		case d.Percent != nil:
			percent += *d.Percent
			if s.Replicas == 0 && *d.Percent > 0 {
				c.addf(f+".percent", "is a share of the application's replicas, which are not given; set replicas")
			}
		}
		switch d.ImagePullPolicy {
		case "", "Always", "IfNotPresent", "Never":
		default:
			c.addf(f+".imagePullPolicy", "%q is not Always, IfNotPresent or Never", d.ImagePullPolicy)
		}
		validateAppWords(&c, f+".command", d.Command)
		validateAppWords(&c, f+".args", d.Args)
		validateAppEnv(&c, f+".env", d.Env)
		validateAppPorts(&c, f+".ports", d.Ports)
		validateAppResources(&c, f+".resources", d.Resources)
	}
	if percent > 100+percentTolerance {
		c.addf("deployments", "the versions' percents add up to %v, more than 100", percent)
	}
	return c.err()
}

// AppSlug is a version as it appears in object and container names:
// lower case, every character outside [a-z0-9-] turned into '-'.
func AppSlug(version string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, version)
}

// appVersionProblem says why v is not an application version: a label value
// (it becomes one) of at most maxAppVersionLen characters.
func appVersionProblem(v string) string {
	if v == "" {
		return "is required: give a version like v1 or 1.2.0"
	}
	if len(v) > maxAppVersionLen {
		return fmt.Sprintf("%q is %d characters long; a version has at most %d", v, len(v), maxAppVersionLen)
	}
	if p := labelNameProblem(v); p != "" {
		return p
	}
	return ""
}

func validateAppWords(c *collector, field string, words []string) {
	if len(words) > maxAppWords {
		c.addf(field, "has %d words, more than %d", len(words), maxAppWords)
		return
	}
	for i, w := range words {
		if len(w) > maxAppWordBytes || strings.ContainsRune(w, 0) {
			c.addf(index(field, i), "must be at most %d bytes without NUL", maxAppWordBytes)
		}
	}
}

func validateAppEnv(c *collector, field string, env []model.EnvVar) {
	if len(env) > maxAppEnv {
		c.addf(field, "has %d variables, more than %d", len(env), maxAppEnv)
		return
	}
	seen := map[string]bool{}
	for i, e := range env {
		f := index(field, i)
		if !isEnvName(e.Name) {
			c.addf(f+".name", "%q is not a variable name: letters, digits and '_', not starting with a digit", e.Name)
		} else if seen[e.Name] {
			c.addf(f+".name", "%q is set twice", e.Name)
		}
		seen[e.Name] = true
		if len(e.Value) > maxAppWordBytes || strings.ContainsRune(e.Value, 0) {
			c.addf(f+".value", "must be at most %d bytes without NUL", maxAppWordBytes)
		}
	}
}

func isEnvName(s string) bool {
	if s == "" || len(s) > 128 || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func validateAppPorts(c *collector, field string, ports []model.ApplicationPort) {
	if len(ports) > maxAppPorts {
		c.addf(field, "has %d ports, more than %d", len(ports), maxAppPorts)
		return
	}
	seen := map[string]bool{}
	for i, p := range ports {
		f := index(field, i)
		if p.Port < 1 || p.Port > 65535 {
			c.addf(f+".port", "%d is not a port (1-65535)", p.Port)
		}
		proto := p.Protocol
		if proto == "" {
			proto = "TCP"
		}
		if proto != "TCP" && proto != "UDP" {
			c.addf(f+".protocol", "%q is not TCP or UDP", p.Protocol)
		}
		key := fmt.Sprintf("%d/%s", p.Port, proto)
		if seen[key] {
			c.addf(f+".port", "%s is listed twice", key)
		}
		seen[key] = true
		if p.Name != "" {
			if pr := labelProblem(p.Name); pr != "" || len(p.Name) > 15 {
				c.addf(f+".name", "%q is not a port name: a DNS-1123 label of at most 15 characters", p.Name)
			}
		}
	}
}

// validateAppResources checks a version's requests and limits against
// the bounds of resources.go, which the operators convert them with.
func validateAppResources(c *collector, field string, r model.Resources) {
	for _, q := range []struct {
		name, v string
		parse   func(string, bool) (int64, error)
		limit   bool
	}{
		{"cpuRequest", r.CPURequest, CPUMillis, false}, {"memoryRequest", r.MemoryRequest, MemoryBytes, false},
		{"cpuLimit", r.CPULimit, CPUMillis, true}, {"memoryLimit", r.MemoryLimit, MemoryBytes, true},
	} {
		if q.v == "" {
			continue
		}
		if _, err := q.parse(q.v, q.limit); err != nil {
			c.addf(field+"."+q.name, "%v", err)
		}
	}
}

// ValidateEnvironment checks an environment an admin creates: only
// environments of hosts are created (a cluster is an environment by
// itself), named by a DNS-1123 label, choosing hosts by a label selector.
func ValidateEnvironment(e model.Environment) error {
	var c collector
	if p := labelProblem(e.Name); p != "" {
		c.addf("name", "%s (an environment name is a DNS-1123 label)", p)
	}
	switch e.Kind {
	case model.EnvironmentHosts:
		if _, err := labels.Parse(e.Selector); err != nil || strings.TrimSpace(e.Selector) == "" {
			c.addf("selector", "%q is not a label selector like group=web,rack!=a", shorten(e.Selector, 80))
		}
	case model.EnvironmentKubernetes:
		c.addf("kind", "every ready cluster is an environment of kind kubernetes by itself; create or import the cluster instead")
	default:
		c.addf("kind", "%q is not an environment kind one creates; use %q", shorten(e.Kind, 40), model.EnvironmentHosts)
	}
	return c.err()
}
