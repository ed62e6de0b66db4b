package kubernetes

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
)

// uninstallPoll is how often Uninstall looks whether the application's
// Deployments and pods are gone.
const uninstallPoll = 500 * time.Millisecond

// Uninstall deletes every Deployment and Service labelled as app's, in
// every namespace (Uninstall is not told the namespace, and an earlier
// apply may have used another one), and any ReplicaSet or pod of app that
// no controller owns, then waits, bounded by ctx, until no Deployment and
// no pod of app is left: the Deployments are deleted with foreground
// propagation, so their ReplicaSets and pods go first. What is already
// gone is not an error; namespaces are never deleted.
func (o *operator) Uninstall(ctx context.Context, app string) error {
	cs, err := o.clientset()
	if err != nil {
		return fmt.Errorf("uninstall %s: %w", app, err)
	}
	sel := metav1.ListOptions{LabelSelector: appSelector(app)}
	deps, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return o.apiError(err, "uninstall %s: list deployments", app)
	}
	for i := range deps.Items {
		if deps.Items[i].DeletionTimestamp != nil {
			continue
		}
		if err := o.deleteDeployment(ctx, cs, &deps.Items[i], metav1.DeletePropagationForeground); err != nil {
			return fmt.Errorf("uninstall %s: %w", app, err)
		}
	}
	svcs, err := cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return o.apiError(err, "uninstall %s: list services", app)
	}
	for i := range svcs.Items {
		if err := o.deleteService(ctx, cs, &svcs.Items[i]); err != nil {
			return fmt.Errorf("uninstall %s: %w", app, err)
		}
	}
	if err := o.deleteOrphans(ctx, cs, app); err != nil {
		return err
	}
	return o.waitGone(ctx, cs, app)
}

// deleteOrphans deletes app's ReplicaSets and pods that no controller owns
// (what a delete with orphan propagation leaves): no garbage collection
// will remove them, and the pods would keep running after the uninstall.
// Those with an owner go with it.
func (o *operator) deleteOrphans(ctx context.Context, cs kubeclient.Interface, app string) error {
	sel := metav1.ListOptions{LabelSelector: appSelector(app)}
	background := metav1.DeletePropagationBackground
	rss, err := cs.AppsV1().ReplicaSets(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return o.apiError(err, "uninstall %s: list replicasets", app)
	}
	for _, rs := range rss.Items {
		if metav1.GetControllerOf(&rs) != nil || rs.DeletionTimestamp != nil {
			continue
		}
		opts := metav1.DeleteOptions{PropagationPolicy: &background, Preconditions: metav1.NewUIDPreconditions(string(rs.UID))}
		if err := cs.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return o.apiError(err, "uninstall %s: delete replicaset %s/%s", app, rs.Namespace, rs.Name)
		}
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
	if err != nil {
		return o.apiError(err, "uninstall %s: list pods", app)
	}
	for _, p := range pods.Items {
		if metav1.GetControllerOf(&p) != nil || p.DeletionTimestamp != nil {
			continue
		}
		opts := metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))}
		if err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return o.apiError(err, "uninstall %s: delete pod %s/%s", app, p.Namespace, p.Name)
		}
	}
	return nil
}

// waitGone polls until app has no Deployment and no pod left, or ctx ends;
// then the error says what is still there.
func (o *operator) waitGone(ctx context.Context, cs kubeclient.Interface, app string) error {
	sel := metav1.ListOptions{LabelSelector: appSelector(app)}
	ticker := time.NewTicker(uninstallPoll)
	defer ticker.Stop()
	for {
		deps, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, sel)
		if err != nil && ctx.Err() == nil {
			return o.apiError(err, "uninstall %s: list deployments", app)
		}
		pods, perr := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, sel)
		if perr != nil && ctx.Err() == nil {
			return o.apiError(perr, "uninstall %s: list pods", app)
		}
		if err == nil && perr == nil && len(deps.Items) == 0 && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			left := "objects"
			if err == nil && perr == nil {
				left = fmt.Sprintf("%d deployment(s) and %d pod(s)", len(deps.Items), len(pods.Items))
			}
			return fmt.Errorf("uninstall %s: %s still there: %w", app, left, ctx.Err())
		case <-ticker.C:
		}
	}
}
