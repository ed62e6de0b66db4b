package kubeclient

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// Resource is a typed client of one kind of object T (lists of type L),
// namespaced or not: the methods singlecloud calls, with the signatures of
// client-go's typed clients (which therefore satisfy it).
type Resource[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	// Patch with types.ApplyPatchType is a server-side apply.
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// ResourceWithStatus is a Resource whose kind has a status subresource.
type ResourceWithStatus[T, L runtime.Object] interface {
	Resource[T, L]
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// The typed clients, named as client-go names them.
type (
	ConfigMapInterface           = Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	EventInterface               = Resource[*corev1.Event, *corev1.EventList]
	NamespaceInterface           = Resource[*corev1.Namespace, *corev1.NamespaceList]
	NodeInterface                = ResourceWithStatus[*corev1.Node, *corev1.NodeList]
	ServiceInterface             = Resource[*corev1.Service, *corev1.ServiceList]
	ServiceAccountInterface      = Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]
	DeploymentInterface          = ResourceWithStatus[*appsv1.Deployment, *appsv1.DeploymentList]
	ReplicaSetInterface          = Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]
	DaemonSetInterface           = ResourceWithStatus[*appsv1.DaemonSet, *appsv1.DaemonSetList]
	ClusterRoleInterface         = Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]
	ClusterRoleBindingInterface  = Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]
	PodDisruptionBudgetInterface = Resource[*policyv1.PodDisruptionBudget, *policyv1.PodDisruptionBudgetList]
)

// CoreV1Interface is the part of the core group singlecloud uses.
type CoreV1Interface interface {
	ConfigMaps(namespace string) ConfigMapInterface
	Events(namespace string) EventInterface
	Namespaces() NamespaceInterface
	Nodes() NodeInterface
	Pods(namespace string) PodInterface
	Services(namespace string) ServiceInterface
	ServiceAccounts(namespace string) ServiceAccountInterface
}

// AppsV1Interface is the part of apps/v1 singlecloud uses.
type AppsV1Interface interface {
	Deployments(namespace string) DeploymentInterface
	ReplicaSets(namespace string) ReplicaSetInterface
	DaemonSets(namespace string) DaemonSetInterface
}

// RbacV1Interface is the part of rbac.authorization.k8s.io/v1 singlecloud
// uses.
type RbacV1Interface interface {
	ClusterRoles() ClusterRoleInterface
	ClusterRoleBindings() ClusterRoleBindingInterface
}

// PolicyV1Interface is the part of policy/v1 singlecloud uses.
type PolicyV1Interface interface {
	PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface
}

// CoreV1Client is the core group over one REST client.
type CoreV1Client struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// ConfigMaps is the client of the config maps of namespace.
func (c *CoreV1Client) ConfigMaps(namespace string) ConfigMapInterface {
	return newResource(c.rc, c.params, "configmaps", namespace, func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} })
}

// Events is the client of the core events of namespace.
func (c *CoreV1Client) Events(namespace string) EventInterface {
	return newResource(c.rc, c.params, "events", namespace, func() *corev1.Event { return &corev1.Event{} }, func() *corev1.EventList { return &corev1.EventList{} })
}

// Namespaces is the client of namespaces.
func (c *CoreV1Client) Namespaces() NamespaceInterface {
	return newResource(c.rc, c.params, "namespaces", "", func() *corev1.Namespace { return &corev1.Namespace{} }, func() *corev1.NamespaceList { return &corev1.NamespaceList{} })
}

// Nodes is the client of nodes.
func (c *CoreV1Client) Nodes() NodeInterface {
	return newResource(c.rc, c.params, "nodes", "", func() *corev1.Node { return &corev1.Node{} }, func() *corev1.NodeList { return &corev1.NodeList{} })
}

// Pods is the client of the pods of namespace ("" is all namespaces).
func (c *CoreV1Client) Pods(namespace string) PodInterface {
	return &pods{
		ClientWithList: newResource(c.rc, c.params, "pods", namespace, func() *corev1.Pod { return &corev1.Pod{} }, func() *corev1.PodList { return &corev1.PodList{} }),
		params:         c.params,
	}
}

// Services is the client of the services of namespace.
func (c *CoreV1Client) Services(namespace string) ServiceInterface {
	return newResource(c.rc, c.params, "services", namespace, func() *corev1.Service { return &corev1.Service{} }, func() *corev1.ServiceList { return &corev1.ServiceList{} })
}

// ServiceAccounts is the client of the service accounts of namespace.
func (c *CoreV1Client) ServiceAccounts(namespace string) ServiceAccountInterface {
	return newResource(c.rc, c.params, "serviceaccounts", namespace, func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} }, func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} })
}

// AppsV1Client is apps/v1 over one REST client.
type AppsV1Client struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// Deployments is the client of the deployments of namespace.
func (c *AppsV1Client) Deployments(namespace string) DeploymentInterface {
	return newResource(c.rc, c.params, "deployments", namespace, func() *appsv1.Deployment { return &appsv1.Deployment{} }, func() *appsv1.DeploymentList { return &appsv1.DeploymentList{} })
}

// ReplicaSets is the client of the replica sets of namespace.
func (c *AppsV1Client) ReplicaSets(namespace string) ReplicaSetInterface {
	return newResource(c.rc, c.params, "replicasets", namespace, func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} }, func() *appsv1.ReplicaSetList { return &appsv1.ReplicaSetList{} })
}

// DaemonSets is the client of the daemon sets of namespace.
func (c *AppsV1Client) DaemonSets(namespace string) DaemonSetInterface {
	return newResource(c.rc, c.params, "daemonsets", namespace, func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} }, func() *appsv1.DaemonSetList { return &appsv1.DaemonSetList{} })
}

// RbacV1Client is rbac.authorization.k8s.io/v1 over one REST client.
type RbacV1Client struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// ClusterRoles is the client of cluster roles.
func (c *RbacV1Client) ClusterRoles() ClusterRoleInterface {
	return newResource(c.rc, c.params, "clusterroles", "", func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} }, func() *rbacv1.ClusterRoleList { return &rbacv1.ClusterRoleList{} })
}

// ClusterRoleBindings is the client of cluster role bindings.
func (c *RbacV1Client) ClusterRoleBindings() ClusterRoleBindingInterface {
	return newResource(c.rc, c.params, "clusterrolebindings", "", func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} }, func() *rbacv1.ClusterRoleBindingList { return &rbacv1.ClusterRoleBindingList{} })
}

// PolicyV1Client is policy/v1 over one REST client.
type PolicyV1Client struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// PodDisruptionBudgets is the client of the disruption budgets of
// namespace.
func (c *PolicyV1Client) PodDisruptionBudgets(namespace string) PodDisruptionBudgetInterface {
	return newResource(c.rc, c.params, "poddisruptionbudgets", namespace, func() *policyv1.PodDisruptionBudget { return &policyv1.PodDisruptionBudget{} }, func() *policyv1.PodDisruptionBudgetList { return &policyv1.PodDisruptionBudgetList{} })
}

// SelfSubjectAccessReviewInterface creates access reviews of the client's
// own user (they are not stored: Create is the only verb).
type SelfSubjectAccessReviewInterface interface {
	Create(ctx context.Context, review *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// AuthorizationV1Interface is the part of authorization.k8s.io/v1
// singlecloud uses.
type AuthorizationV1Interface interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface
}

// AuthorizationV1Client is authorization.k8s.io/v1 over one REST client.
type AuthorizationV1Client struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// SelfSubjectAccessReviews is the client of self subject access reviews.
func (c *AuthorizationV1Client) SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface {
	return gentype.NewClient("selfsubjectaccessreviews", c.rc, c.params, "", func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} }, gentype.PrefersProtobuf[*authorizationv1.SelfSubjectAccessReview]())
}

// objectWithMeta is what gentype's clients take: a typed object with
// object metadata.
type objectWithMeta interface {
	runtime.Object
	metav1.Object
}

// newResource is gentype's client of resource in namespace ("" for a
// cluster-scoped kind, or all namespaces), preferring protobuf on the wire
// as client-go's generated clients of built-in kinds do.
func newResource[T objectWithMeta, L runtime.Object](rc rest.Interface, params runtime.ParameterCodec, resource, namespace string, newObj func() T, newList func() L) *gentype.ClientWithList[T, L] {
	return gentype.NewClientWithList(resource, rc, params, namespace, newObj, newList, gentype.PrefersProtobuf[T]())
}
