package kubernetes

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// containerName is the name of the one container of every pod.
const containerName = "app"

// namespaceOf is the namespace of a request's objects: "" is "default".
func namespaceOf(req *model.ApplyRequest) string {
	if req.Namespace == "" {
		return "default"
	}
	return req.Namespace
}

// DeploymentName is the name of the Deployment of one version of app:
// "<app>-<slug(version)>", where the slug lowercases the version and turns
// every character outside [a-z0-9-] into '-' (so "V1.2" is "v1-2").
func DeploymentName(app, version string) string {
	return app + "-" + slug(version)
}

func slug(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	return string(b)
}

// appLabels are the labels of every object of app; they also select the
// pods of all its versions, which is what the Service does.
func appLabels(app string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: app}
}

// versionLabels are the labels of one version's Deployment and pods, and
// the Deployment's selector.
func versionLabels(app, version string) map[string]string {
	l := appLabels(app)
	l[LabelVersion] = version
	return l
}

// appSelector is the label selector of every object of app.
func appSelector(app string) string {
	return labels.SelectorFromSet(appLabels(app)).String()
}

// buildDeployment turns one version of req into the apply configuration of
// its Deployment in namespace ns. Its errors wrap ErrInvalidRequest and name
// the version and the field.
func buildDeployment(req *model.ApplyRequest, ns string, d model.VersionDeployment, minReady time.Duration) (*applyObject, error) {
	if d.Replicas == nil || *d.Replicas < 0 || *d.Replicas > math.MaxInt32 {
		return nil, fmt.Errorf("%w: version %q: replicas must be resolved to a number from 0 to %d", ErrInvalidRequest, d.Version, math.MaxInt32)
	}
	container, err := buildContainer(d)
	if err != nil {
		return nil, err
	}
	lbl := versionLabels(req.App, d.Version)
	// minReadySeconds makes the Deployment's availableReplicas agree with
	// the readiness rule of GetApplicationStatus.
	minReadySeconds := int32(math.Ceil(minReady.Seconds()))
	return &applyObject{
		APIVersion: "apps/v1",
		Kind:       "Deployment",
		Metadata: applyMeta{
			Name:        DeploymentName(req.App, d.Version),
			Namespace:   ns,
			Labels:      lbl,
			Annotations: map[string]string{AnnotationSpecHash: req.SpecHash},
		},
		Spec: applyDeploymentSpec{
			Replicas:        int32(*d.Replicas),
			MinReadySeconds: minReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: lbl},
			Template: applyPodTemplate{
				Metadata: applyMeta{Labels: lbl},
				Spec:     applyPodSpec{Containers: []applyContainer{container}},
			},
		},
	}, nil
}

// buildContainer is the container "app" of one version's pods.
func buildContainer(d model.VersionDeployment) (applyContainer, error) {
	policy := corev1.PullIfNotPresent
	switch p := corev1.PullPolicy(d.ImagePullPolicy); p {
	case "":
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		policy = p
	default:
		return applyContainer{}, fmt.Errorf("%w: version %q: imagePullPolicy %q is not Always, IfNotPresent or Never", ErrInvalidRequest, d.Version, d.ImagePullPolicy)
	}
	c := applyContainer{
		Name:            containerName,
		Image:           d.Image,
		ImagePullPolicy: policy,
		Command:         d.Command,
		Args:            d.Args,
	}
	for _, e := range d.Env {
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	for _, p := range d.Ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: int32(p.Port), Protocol: protocol(p.Protocol)})
	}
	res, err := buildResources(d)
	if err != nil {
		return applyContainer{}, err
	}
	c.Resources = res
	return c, nil
}

// buildResources parses a version's requests and limits; nil when it sets
// none.
func buildResources(d model.VersionDeployment) (*corev1.ResourceRequirements, error) {
	fields := []struct {
		field, value string
		name         corev1.ResourceName
		limit        bool
	}{
		{"resources.cpuRequest", d.Resources.CPURequest, corev1.ResourceCPU, false},
		{"resources.memoryRequest", d.Resources.MemoryRequest, corev1.ResourceMemory, false},
		{"resources.cpuLimit", d.Resources.CPULimit, corev1.ResourceCPU, true},
		{"resources.memoryLimit", d.Resources.MemoryLimit, corev1.ResourceMemory, true},
	}
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		q, err := resource.ParseQuantity(f.value)
		if err != nil {
			return nil, fmt.Errorf("%w: version %q: %s %q: %w", ErrInvalidRequest, d.Version, f.field, f.value, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%w: version %q: %s %q is negative", ErrInvalidRequest, d.Version, f.field, f.value)
		}
		if f.limit {
			limits[f.name] = q
		} else {
			requests[f.name] = q
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return nil, nil
	}
	r := &corev1.ResourceRequirements{}
	if len(requests) > 0 {
		r.Requests = requests
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
	return r, nil
}

// protocol is a port's protocol in Kubernetes' spelling; "" is TCP.
func protocol(p string) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return corev1.Protocol(strings.ToUpper(p))
}

// servicePort is one port of the application's Service.
type servicePort struct {
	Name     string
	Port     int32
	Protocol corev1.Protocol
}

// servicePorts is the union of every version's ports, one per port and
// protocol, sorted by port then protocol. A port keeps the first name a
// version gives it; a port with no name (or whose name another port took)
// is named "p<port>-<protocol in lower case>", since a Service with several
// ports needs a unique name on each.
func servicePorts(deps []model.VersionDeployment) []servicePort {
	type key struct {
		port  int32
		proto corev1.Protocol
	}
	byKey := map[key]*servicePort{}
	var order []key
	for _, d := range deps {
		for _, p := range d.Ports {
			k := key{int32(p.Port), protocol(p.Protocol)}
			sp, ok := byKey[k]
			if !ok {
				sp = &servicePort{Port: k.port, Protocol: k.proto}
				byKey[k] = sp
				order = append(order, k)
			}
			if sp.Name == "" {
				sp.Name = p.Name
			}
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].port != order[j].port {
			return order[i].port < order[j].port
		}
		return order[i].proto < order[j].proto
	})
	ports := make([]servicePort, 0, len(order))
	used := map[string]bool{}
	for _, k := range order {
		sp := *byKey[k]
		if sp.Name == "" || used[sp.Name] {
			sp.Name = "p" + strconv.Itoa(int(sp.Port)) + "-" + strings.ToLower(string(sp.Protocol))
		}
		used[sp.Name] = true
		ports = append(ports, sp)
	}
	return ports
}

// buildService is the apply configuration of the application's Service,
// which spreads traffic over the pods of every version (so each version
// gets its share of replicas' share of it); nil when no version has ports.
func buildService(req *model.ApplyRequest, ns string) *applyObject {
	ports := servicePorts(req.Deployments)
	if len(ports) == 0 {
		return nil
	}
	spec := applyServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: appLabels(req.App)}
	for _, p := range ports {
		spec.Ports = append(spec.Ports, corev1.ServicePort{
			Name:       p.Name,
			Port:       p.Port,
			Protocol:   p.Protocol,
			TargetPort: intstr.FromInt32(p.Port),
		})
	}
	return &applyObject{
		APIVersion: "v1",
		Kind:       "Service",
		Metadata:   applyMeta{Name: req.App, Namespace: ns, Labels: appLabels(req.App)},
		Spec:       spec,
	}
}
