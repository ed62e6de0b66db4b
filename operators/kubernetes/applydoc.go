package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// applyObject is a server-side apply document: the fields singlecloud
// sets and nothing else. It is its own type rather than a k8s.io/api
// object because those marshal zero values (status: {},
// creationTimestamp: null, resources: {}) that the field manager would
// then own, and rather than client-go's apply configurations because
// those link every API group. Every field below is set on purpose; each
// optional one is omitted when empty.
type applyObject struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   applyMeta `json:"metadata"`
	Spec       any       `json:"spec"`
}

// applyMeta is the metadata of an apply document or pod template.
type applyMeta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// applyDeploymentSpec is the part of a DeploymentSpec we own. Replicas
// and minReadySeconds are always sent, 0 included.
type applyDeploymentSpec struct {
	Replicas        int32                 `json:"replicas"`
	MinReadySeconds int32                 `json:"minReadySeconds"`
	Selector        *metav1.LabelSelector `json:"selector"`
	Template        applyPodTemplate      `json:"template"`
}

type applyPodTemplate struct {
	Metadata applyMeta    `json:"metadata"`
	Spec     applyPodSpec `json:"spec"`
}

type applyPodSpec struct {
	Containers []applyContainer `json:"containers"`
}

// applyContainer is the part of a Container we own; the k8s.io/api types
// inside it marshal only what is set.
type applyContainer struct {
	Name            string                       `json:"name"`
	Image           string                       `json:"image"`
	ImagePullPolicy corev1.PullPolicy            `json:"imagePullPolicy"`
	Command         []string                     `json:"command,omitempty"`
	Args            []string                     `json:"args,omitempty"`
	Env             []corev1.EnvVar              `json:"env,omitempty"`
	Ports           []corev1.ContainerPort       `json:"ports,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// applyServiceSpec is the part of a ServiceSpec we own.
type applyServiceSpec struct {
	Type     corev1.ServiceType   `json:"type"`
	Selector map[string]string    `json:"selector"`
	Ports    []corev1.ServicePort `json:"ports"`
}

// patcher is the part of a typed client apply uses.
type patcher[T runtime.Object] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// apply server-side applies doc through c as fieldManager, forcing
// ownership of the fields doc sets (what the clientset's Apply with
// ApplyOptions{Force: true} does).
func apply[T runtime.Object](ctx context.Context, c patcher[T], doc *applyObject, fieldManager string) (T, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("encode %s %s/%s: %w", doc.Kind, doc.Metadata.Namespace, doc.Metadata.Name, err)
	}
	force := true
	return c.Patch(ctx, doc.Metadata.Name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
}
