package zke

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// addons sets the cluster up through its API: the RBAC binding that lets
// the API server reach kubelets (logs, exec), node role labels, the
// configured labels and taints, and CoreDNS.
func (r *run) addons(ctx context.Context, rep *workflow.Reporter) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	if err := ensureKubeletAPIBinding(ctx, kube); err != nil {
		return err
	}
	rep.Report("", "RBAC for the API server's kubelet client in place")
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		if err := r.labelAndTaint(ctx, kube, n); err != nil {
			return nodeErr(n, err, "")
		}
		rep.Report(n.Name, "labels and taints applied")
	}
	if err := r.ensureCoreDNS(ctx, kube); err != nil {
		return fmt.Errorf("coredns: %w", err)
	}
	rep.Report("", "CoreDNS objects in place (image "+r.images[model.ImageCoreDNS]+"); waiting for it to serve")
	if err := r.waitCoreDNS(ctx, rep, kube, corednsReadyTimeout); err != nil {
		return err
	}
	rep.Report("", "CoreDNS serves the cluster DNS at "+r.cfg.ClusterDNSServiceIP)
	return nil
}

func ensureKubeletAPIBinding(ctx context.Context, kube kubeclient.Interface) error {
	return ensureBinding(ctx, kube, pki.KubeletAPIAdminBinding, pki.KubeletAPIAdminClusterRole, pki.APIServerKubeletClientCN)
}

// ensureBinding makes the ClusterRoleBinding name grant role to user
// alone (a user it named before loses the role).
func ensureBinding(ctx context.Context, kube kubeclient.Interface, name, role, user string) error {
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"io.zke.managed": "true"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	_, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = kube.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("cluster role binding %s: %w", name, err)
	}
	return nil
}

// labelAndTaint makes n's Node carry its role labels and the configured
// labels and taints (taints zke set earlier and the config dropped are
// removed; taints set by others are kept). The kubelet and the node
// controller update the Node too: a write that lost the race is read and
// made again (client-go's bounded retry on conflict).
func (r *run) labelAndTaint(ctx context.Context, kube kubeclient.Interface, n node) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error { return r.labelAndTaintOnce(ctx, kube, n) })
}

// labelAndTaintOnce is one read-modify-write of labelAndTaint.
func (r *run) labelAndTaintOnce(ctx context.Context, kube kubeclient.Interface, n node) error {
	k, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node: %w", err)
	}
	if k.Labels == nil {
		k.Labels = map[string]string{}
	}
	for _, role := range n.Roles {
		k.Labels["node-role.kubernetes.io/"+string(role)] = "true"
	}
	for key, v := range n.Labels {
		k.Labels[key] = v
	}
	if k.Annotations == nil {
		k.Annotations = map[string]string{}
	}
	var taints []corev1.Taint
	for _, t := range k.Spec.Taints {
		if !hasTaint(n.Taints, t) && !zkeTaint(k.Annotations, t) {
			taints = append(taints, t)
		}
	}
	for _, t := range n.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	k.Spec.Taints = taints
	k.Annotations[zkeTaintsAnnotation] = zkeTaintsValue(n.Taints)
	if _, err := kube.CoreV1().Nodes().Update(ctx, k, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update node labels and taints: %w", err)
	}
	return nil
}

// zkeTaintsAnnotation records which taints zke set on a node.
const zkeTaintsAnnotation = "zke.io/taints"

// zkeTaintsValue is the zkeTaintsAnnotation of a node zke gave ts.
func zkeTaintsValue(ts []model.Taint) string {
	managed := ""
	for _, t := range ts {
		managed += t.Key + ":" + t.Effect + ","
	}
	return managed
}

func hasTaint(ts []model.Taint, t corev1.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Effect == string(t.Effect) {
			return true
		}
	}
	return false
}

func zkeTaint(ann map[string]string, t corev1.Taint) bool {
	for _, kv := range splitNonEmpty(ann[zkeTaintsAnnotation], ',') {
		if kv == t.Key+":"+string(t.Effect) {
			return true
		}
	}
	return false
}

func splitNonEmpty(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
