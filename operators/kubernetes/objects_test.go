package kubernetes

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func intp(i int) *int { return &i }

// decode turns an apply configuration into the typed object it describes.
func decode(t *testing.T, cfg any, into any) {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("unmarshal %s: %v", data, err)
	}
}

func TestDeploymentName(t *testing.T) {
	tests := []struct{ app, version, want string }{
		{"web", "v1", "web-v1"},
		{"web", "V1.2", "web-v1-2"},
		{"web", "1.0_beta+build", "web-1-0-beta-build"},
		{"api", "release/2-x", "api-release-2-x"},
	}
	for _, tc := range tests {
		if got := DeploymentName(tc.app, tc.version); got != tc.want {
			t.Errorf("DeploymentName(%q, %q) = %q, want %q", tc.app, tc.version, got, tc.want)
		}
	}
}

func TestBuildDeployment(t *testing.T) {
	req := &model.ApplyRequest{App: "web", SpecHash: "abc123"}
	d := model.VersionDeployment{
		Version: "V1.2", Image: "nginx:1.27", Replicas: intp(3),
		Ports:   []model.ApplicationPort{{Name: "http", Port: 80}, {Port: 53, Protocol: "udp"}},
		Env:     []model.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		Command: []string{"/bin/sh"}, Args: []string{"-c", "serve"},
		Resources: model.Resources{CPURequest: "100m", MemoryRequest: "64Mi", CPULimit: "1", MemoryLimit: "128Mi"},
	}
	cfg, err := buildDeployment(req, "shop", d, 1500*time.Millisecond)
	if err != nil {
		t.Fatalf("buildDeployment: %v", err)
	}
	var got appsv1.Deployment
	decode(t, cfg, &got)

	wantLabels := map[string]string{LabelManagedBy: "singlecloud", LabelName: "web", LabelVersion: "V1.2"}
	checks := []struct {
		what      string
		got, want any
	}{
		{"kind", got.Kind, "Deployment"},
		{"apiVersion", got.APIVersion, "apps/v1"},
		{"name", got.Name, "web-v1-2"},
		{"namespace", got.Namespace, "shop"},
		{"labels", got.Labels, wantLabels},
		{"annotations", got.Annotations, map[string]string{AnnotationSpecHash: "abc123"}},
		{"selector", got.Spec.Selector.MatchLabels, wantLabels},
		{"selector expressions", len(got.Spec.Selector.MatchExpressions), 0},
		{"template labels", got.Spec.Template.Labels, wantLabels},
		{"replicas", *got.Spec.Replicas, int32(3)},
		{"minReadySeconds (rounded up)", got.Spec.MinReadySeconds, int32(2)},
		{"containers", len(got.Spec.Template.Spec.Containers), 1},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if t.Failed() {
		return
	}
	c := got.Spec.Template.Spec.Containers[0]
	want := corev1.Container{
		Name: "app", Image: "nginx:1.27", ImagePullPolicy: corev1.PullIfNotPresent,
		Command: []string{"/bin/sh"}, Args: []string{"-c", "serve"},
		Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
		Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
			{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
	}
	// Quantities compare by value, not by their cached string form.
	for name, q := range want.Resources.Requests {
		if g := c.Resources.Requests[name]; g.Cmp(q) != 0 {
			t.Errorf("request %s = %s, want %s", name, g.String(), q.String())
		}
	}
	for name, q := range want.Resources.Limits {
		if g := c.Resources.Limits[name]; g.Cmp(q) != 0 {
			t.Errorf("limit %s = %s, want %s", name, g.String(), q.String())
		}
	}
	c.Resources, want.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("container:\n got %+v\nwant %+v", c, want)
	}
}

func TestBuildDeploymentMinimal(t *testing.T) {
	req := &model.ApplyRequest{App: "web"}
	cfg, err := buildDeployment(req, "default", model.VersionDeployment{Version: "v1", Image: "busybox", Replicas: intp(0), ImagePullPolicy: "Always"}, 3*time.Second)
	if err != nil {
		t.Fatalf("buildDeployment: %v", err)
	}
	var got appsv1.Deployment
	decode(t, cfg, &got)
	c := got.Spec.Template.Spec.Containers[0]
	if *got.Spec.Replicas != 0 || got.Spec.MinReadySeconds != 3 || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("replicas %d, minReadySeconds %d, pull policy %q; want 0, 3, Always", *got.Spec.Replicas, got.Spec.MinReadySeconds, c.ImagePullPolicy)
	}
	if c.Resources.Requests != nil || c.Resources.Limits != nil || c.Command != nil || c.Env != nil || c.Ports != nil {
		t.Errorf("container sets fields the request does not: %+v", c)
	}
}

func TestBuildDeploymentErrors(t *testing.T) {
	tests := []struct {
		name  string
		d     model.VersionDeployment
		wants []string
	}{
		{"bad cpu request", model.VersionDeployment{Resources: model.Resources{CPURequest: "lots"}}, []string{`version "v1"`, `resources.cpuRequest "lots"`}},
		{"bad memory request", model.VersionDeployment{Resources: model.Resources{MemoryRequest: "64MB!"}}, []string{`version "v1"`, "resources.memoryRequest"}},
		{"bad cpu limit", model.VersionDeployment{Resources: model.Resources{CPURequest: "1", CPULimit: "1.2.3"}}, []string{`version "v1"`, "resources.cpuLimit"}},
		{"bad memory limit", model.VersionDeployment{Resources: model.Resources{MemoryLimit: "lots-of-ram"}}, []string{`version "v1"`, "resources.memoryLimit"}},
		{"negative memory limit", model.VersionDeployment{Resources: model.Resources{MemoryLimit: "-1Gi"}}, []string{`version "v1"`, `resources.memoryLimit "-1Gi" is negative`}},
		{"bad pull policy", model.VersionDeployment{ImagePullPolicy: "Sometimes"}, []string{`version "v1"`, `imagePullPolicy "Sometimes"`}},
		{"unresolved replicas", model.VersionDeployment{Replicas: nil}, []string{`version "v1"`, "replicas"}},
		{"negative replicas", model.VersionDeployment{Replicas: intp(-1)}, []string{`version "v1"`, "replicas"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.d
			d.Version, d.Image = "v1", "busybox"
			if d.Replicas == nil && tc.name != "unresolved replicas" {
				d.Replicas = intp(1)
			}
			_, err := buildDeployment(&model.ApplyRequest{App: "web"}, "default", d, time.Second)
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("err = %v, want ErrInvalidRequest", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not name %s", err, w)
				}
			}
		})
	}
}

func TestServicePorts(t *testing.T) {
	ver := func(ports ...model.ApplicationPort) model.VersionDeployment {
		return model.VersionDeployment{Ports: ports}
	}
	tests := []struct {
		name string
		deps []model.VersionDeployment
		want []servicePort
	}{
		{"no ports", []model.VersionDeployment{ver(), ver()}, []servicePort{}},
		{"same port in two versions is one", []model.VersionDeployment{ver(model.ApplicationPort{Port: 80}), ver(model.ApplicationPort{Port: 80, Protocol: "TCP"})},
			[]servicePort{{"p80-tcp", 80, corev1.ProtocolTCP}}},
		{"first name wins, later versions may name an unnamed port",
			[]model.VersionDeployment{ver(model.ApplicationPort{Port: 80}), ver(model.ApplicationPort{Port: 80, Name: "http"}), ver(model.ApplicationPort{Port: 80, Name: "web"})},
			[]servicePort{{"http", 80, corev1.ProtocolTCP}}},
		{"same port, two protocols", []model.VersionDeployment{ver(model.ApplicationPort{Port: 53, Protocol: "udp"}, model.ApplicationPort{Port: 53})},
			[]servicePort{{"p53-tcp", 53, corev1.ProtocolTCP}, {"p53-udp", 53, corev1.ProtocolUDP}}},
		{"union sorted by port", []model.VersionDeployment{ver(model.ApplicationPort{Port: 8080, Name: "admin"}), ver(model.ApplicationPort{Port: 443, Name: "https"}, model.ApplicationPort{Port: 80, Name: "http"})},
			[]servicePort{{"http", 80, corev1.ProtocolTCP}, {"https", 443, corev1.ProtocolTCP}, {"admin", 8080, corev1.ProtocolTCP}}},
		{"a name two ports give goes to the first", []model.VersionDeployment{ver(model.ApplicationPort{Port: 8080, Name: "http"}), ver(model.ApplicationPort{Port: 80, Name: "http"})},
			[]servicePort{{"http", 80, corev1.ProtocolTCP}, {"p8080-tcp", 8080, corev1.ProtocolTCP}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := servicePorts(tc.deps); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("servicePorts = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBuildService(t *testing.T) {
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
		{Version: "v1", Ports: []model.ApplicationPort{{Port: 80, Name: "http"}}},
		{Version: "v2", Ports: []model.ApplicationPort{{Port: 80}, {Port: 9090, Protocol: "UDP"}}},
	}}
	var got corev1.Service
	decode(t, buildService(req, "shop"), &got)
	wantLabels := map[string]string{LabelManagedBy: "singlecloud", LabelName: "web"}
	want := corev1.Service{}
	want.Kind, want.APIVersion = "Service", "v1"
	want.Name, want.Namespace, want.Labels = "web", "shop", wantLabels
	want.Spec = corev1.ServiceSpec{
		Type:     corev1.ServiceTypeClusterIP,
		Selector: wantLabels,
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
			{Name: "p9090-udp", Port: 9090, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(9090)},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("service:\n got %+v\nwant %+v", got, want)
	}

	noPorts := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{{Version: "v1"}}}
	if s := buildService(noPorts, "shop"); s != nil {
		t.Fatalf("buildService without ports = %+v, want nil", s)
	}
}

// TestApplyDocumentsSendOnlyWhatIsSet: a server-side apply makes the field
// manager own every field it sends, so the documents must not carry the
// zero values typed k8s.io/api objects marshal (status, creationTimestamp:
// null, empty resources, strategy, ...).
func TestApplyDocumentsSendOnlyWhatIsSet(t *testing.T) {
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
		{Version: "v1", Image: "busybox", Replicas: intp(1), Ports: []model.ApplicationPort{{Port: 80}}},
	}}
	dep, err := buildDeployment(req, "default", req.Deployments[0], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  *applyObject
		want string
	}{
		{"deployment", dep, `{"apiVersion":"apps/v1","kind":"Deployment",` +
			`"metadata":{"name":"web-v1","namespace":"default","labels":{"app.singlecloud.io/managed-by":"singlecloud","app.singlecloud.io/name":"web","app.singlecloud.io/version":"v1"},"annotations":{"app.singlecloud.io/spec-hash":""}},` +
			`"spec":{"replicas":1,"minReadySeconds":1,"selector":{"matchLabels":{"app.singlecloud.io/managed-by":"singlecloud","app.singlecloud.io/name":"web","app.singlecloud.io/version":"v1"}},` +
			`"template":{"metadata":{"labels":{"app.singlecloud.io/managed-by":"singlecloud","app.singlecloud.io/name":"web","app.singlecloud.io/version":"v1"}},` +
			`"spec":{"containers":[{"name":"app","image":"busybox","imagePullPolicy":"IfNotPresent","ports":[{"containerPort":80,"protocol":"TCP"}]}]}}}}`},
		{"service", buildService(req, "default"), `{"apiVersion":"v1","kind":"Service",` +
			`"metadata":{"name":"web","namespace":"default","labels":{"app.singlecloud.io/managed-by":"singlecloud","app.singlecloud.io/name":"web"}},` +
			`"spec":{"type":"ClusterIP","selector":{"app.singlecloud.io/managed-by":"singlecloud","app.singlecloud.io/name":"web"},"ports":[{"name":"p80-tcp","protocol":"TCP","port":80,"targetPort":80}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := json.Marshal(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.want {
				t.Fatalf("apply document:\n got %s\nwant %s", data, tc.want)
			}
		})
	}
}
