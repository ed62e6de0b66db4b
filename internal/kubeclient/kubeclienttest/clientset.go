// Package kubeclienttest adapts client-go's clientset, and so its fake
// clientset (k8s.io/client-go/kubernetes/fake), to kubeclient.Interface,
// for tests. It links every API group, which is what kubeclient avoids:
// only test code may import it (cmd/singlecloud's dependency test checks
// that the server does not).
package kubeclienttest

import (
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
)

// FromClientset is cs as a kubeclient.Interface: every call goes to cs.
func FromClientset(cs kubernetes.Interface) kubeclient.Interface { return clientset{cs} }

type clientset struct{ cs kubernetes.Interface }

func (c clientset) CoreV1() kubeclient.CoreV1Interface     { return coreV1{c.cs.CoreV1()} }
func (c clientset) AppsV1() kubeclient.AppsV1Interface     { return appsV1{c.cs.AppsV1()} }
func (c clientset) RbacV1() kubeclient.RbacV1Interface     { return rbacV1{c.cs.RbacV1()} }
func (c clientset) PolicyV1() kubeclient.PolicyV1Interface { return policyV1{c.cs.PolicyV1()} }
func (c clientset) AuthorizationV1() kubeclient.AuthorizationV1Interface {
	return authorizationV1{c.cs.AuthorizationV1()}
}

// Discovery is the clientset's discovery client (the fake's RESTClient is
// nil).
func (c clientset) Discovery() kubeclient.DiscoveryInterface { return c.cs.Discovery() }

type coreV1 struct{ c corev1client.CoreV1Interface }

func (c coreV1) ConfigMaps(ns string) kubeclient.ConfigMapInterface { return c.c.ConfigMaps(ns) }
func (c coreV1) Events(ns string) kubeclient.EventInterface         { return c.c.Events(ns) }
func (c coreV1) Namespaces() kubeclient.NamespaceInterface          { return c.c.Namespaces() }
func (c coreV1) Nodes() kubeclient.NodeInterface                    { return c.c.Nodes() }
func (c coreV1) Pods(ns string) kubeclient.PodInterface             { return c.c.Pods(ns) }
func (c coreV1) Services(ns string) kubeclient.ServiceInterface     { return c.c.Services(ns) }
func (c coreV1) ServiceAccounts(ns string) kubeclient.ServiceAccountInterface {
	return c.c.ServiceAccounts(ns)
}

type appsV1 struct{ c appsv1client.AppsV1Interface }

func (c appsV1) Deployments(ns string) kubeclient.DeploymentInterface { return c.c.Deployments(ns) }
func (c appsV1) ReplicaSets(ns string) kubeclient.ReplicaSetInterface { return c.c.ReplicaSets(ns) }
func (c appsV1) DaemonSets(ns string) kubeclient.DaemonSetInterface   { return c.c.DaemonSets(ns) }

type rbacV1 struct{ c rbacv1client.RbacV1Interface }

func (c rbacV1) ClusterRoles() kubeclient.ClusterRoleInterface { return c.c.ClusterRoles() }
func (c rbacV1) ClusterRoleBindings() kubeclient.ClusterRoleBindingInterface {
	return c.c.ClusterRoleBindings()
}

type policyV1 struct {
	c policyv1client.PolicyV1Interface
}

func (c policyV1) PodDisruptionBudgets(ns string) kubeclient.PodDisruptionBudgetInterface {
	return c.c.PodDisruptionBudgets(ns)
}

type authorizationV1 struct {
	c authorizationv1client.AuthorizationV1Interface
}

func (c authorizationV1) SelfSubjectAccessReviews() kubeclient.SelfSubjectAccessReviewInterface {
	return c.c.SelfSubjectAccessReviews()
}
