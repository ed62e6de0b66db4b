package zke

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
)

const corednsName = "coredns"

// ensureCoreDNS creates or updates CoreDNS: its RBAC, Corefile, Deployment
// and the kube-dns Service on the configured cluster DNS IP. It does not
// wait for the pods: on an air-gapped cluster the image may arrive later.
func (r *run) ensureCoreDNS(ctx context.Context, kube kubeclient.Interface) error {
	labels := map[string]string{"k8s-app": "kube-dns", "io.zke.managed": "true"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: labels}
	}
	corefile := r.corefile()
	one := int32(1)
	steps := []func() error{
		func() error {
			_, err := upsert(ctx, kube.CoreV1().ServiceAccounts(metav1.NamespaceSystem), &corev1.ServiceAccount{ObjectMeta: meta(corednsName)})
			return err
		},
		func() error {
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:" + corednsName, Labels: labels}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			}}
			_, err := upsert(ctx, kube.RbacV1().ClusterRoles(), cr)
			return err
		},
		func() error {
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "system:" + corednsName, Labels: labels},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:" + corednsName},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: corednsName, Namespace: metav1.NamespaceSystem}}}
			_, err := upsert(ctx, kube.RbacV1().ClusterRoleBindings(), crb)
			return err
		},
		func() error {
			cm := &corev1.ConfigMap{ObjectMeta: meta(corednsName), Data: map[string]string{"Corefile": corefile}}
			_, err := upsert(ctx, kube.CoreV1().ConfigMaps(metav1.NamespaceSystem), cm)
			return err
		},
		func() error {
			d := &appsv1.Deployment{ObjectMeta: meta(corednsName), Spec: appsv1.DeploymentSpec{
				Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: corednsName,
						PriorityClassName:  "system-cluster-critical",
						DNSPolicy:          corev1.DNSDefault,
						Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Containers: []corev1.Container{{
							Name: corednsName, Image: r.images[model.ImageCoreDNS], Args: []string{"-conf", "/etc/coredns/Corefile"},
							Ports: []corev1.ContainerPort{
								{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
								{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							},
							VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
							ReadinessProbe: corednsReadinessProbe(),
						}},
						Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
							ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: corednsName}},
						}}},
					},
				},
			}}
			_, err := upsert(ctx, kube.AppsV1().Deployments(metav1.NamespaceSystem), d)
			return err
		},
		func() error {
			svc := &corev1.Service{ObjectMeta: meta("kube-dns"), Spec: corev1.ServiceSpec{
				Selector:  map[string]string{"k8s-app": "kube-dns"},
				ClusterIP: r.cfg.ClusterDNSServiceIP,
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
				},
			}}
			// The ClusterIP cannot change and nothing else of ours does:
			// an existing service is kept. (Create would fail on the IP,
			// which the API server checks before the name.)
			_, err := kube.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, svc.Name, metav1.GetOptions{})
			if err == nil {
				return nil
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
			_, err = kube.CoreV1().Services(metav1.NamespaceSystem).Create(ctx, svc, metav1.CreateOptions{})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// corefile is CoreDNS's configuration for the cluster. It forwards to
// the upstreams named explicitly (dnsUpstreams), never to a resolv.conf
// that may name a loopback resolver; /etc/resolv.conf only when
// preflight has not run (no facts).
func (r *run) corefile() string {
	upstream := etcResolvConf
	if ups := r.dnsUpstreams(); len(ups) > 0 {
		upstream = strings.Join(ups, " ")
	}
	return fmt.Sprintf(`.:53 {
    errors
    health
    ready
    kubernetes %s in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . %s
    cache 30
    loop
    reload
}
`, r.cfg.ClusterDomain, upstream)
}

// objectClient is the part of a typed client-go client that upsert uses.
type objectClient[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// upsert creates obj, or replaces the existing object of its name with it
// (keeping the resource version so the update is accepted).
func upsert[T metav1.Object](ctx context.Context, c objectClient[T], obj T) (T, error) {
	out, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return out, err
	}
	cur, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return out, err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	return c.Update(ctx, obj, metav1.UpdateOptions{})
}
