package kubeclient

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// PodInterface is the pods client: a Resource with the subresources
// singlecloud uses (eviction, log) and binding, which stands in for the
// scheduler where tests have none.
type PodInterface interface {
	ResourceWithStatus[*corev1.Pod, *corev1.PodList]
	// Bind assigns the pod binding names to binding.Target.
	Bind(ctx context.Context, binding *corev1.Binding, opts metav1.CreateOptions) error
	// EvictV1 asks for the pod eviction names to be evicted, which the
	// API server refuses (429) while a disruption budget forbids it.
	EvictV1(ctx context.Context, eviction *policyv1.Eviction) error
	// GetLogs is a GET of the pod's log, not yet sent.
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// pods is client-go's pods client without the methods nobody here calls;
// the extra methods are copies of client-go's pod_expansion.go.
type pods struct {
	*gentype.ClientWithList[*corev1.Pod, *corev1.PodList]
	params runtime.ParameterCodec
}

func (c *pods) Bind(ctx context.Context, binding *corev1.Binding, opts metav1.CreateOptions) error {
	return c.GetClient().Post().Namespace(c.GetNamespace()).Resource("pods").Name(binding.Name).
		VersionedParams(&opts, c.params).SubResource("binding").Body(binding).Do(ctx).Error()
}

func (c *pods) EvictV1(ctx context.Context, eviction *policyv1.Eviction) error {
	return c.GetClient().Post().Namespace(c.GetNamespace()).Resource("pods").Name(eviction.Name).
		SubResource("eviction").Body(eviction).Do(ctx).Error()
}

func (c *pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return c.GetClient().Get().Namespace(c.GetNamespace()).Name(name).Resource("pods").
		SubResource("log").VersionedParams(opts, c.params)
}
