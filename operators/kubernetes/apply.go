package kubernetes

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// Apply makes the cluster run req: the namespace (created when missing),
// one Deployment per version, the Service when a version has ports, and
// nothing else of the application. The objects are built first, so a bad
// request changes nothing; then, in order:
//
//  1. every target name is checked: an object there without our labels
//     for this application fails the apply with ErrNotManaged (before the
//     namespace is created, so a refused apply changes nothing either);
//  2. a Deployment of ours at a target name that runs another version is
//     deleted (its selector, which names the version, cannot change);
//  3. the Deployments and the Service are server-side applied, forcing
//     ownership of the fields we set, so an identical request changes
//     nothing;
//  4. our Deployments and Services that the request no longer describes
//     (other versions, another namespace, a Service with no ports left) are
//     deleted, with their pods by background propagation.
//
// New versions are applied before old ones are pruned, so a version switch
// never leaves the application with neither.
func (o *operator) Apply(ctx context.Context, req *model.ApplyRequest) (*model.ApplyResponse, error) {
	ns := namespaceOf(req)
	deps := make([]*applyObject, 0, len(req.Deployments))
	for _, d := range req.Deployments {
		dep, err := buildDeployment(req, ns, d, o.minReady)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", req.App, err)
		}
		deps = append(deps, dep)
	}
	svc := buildService(req, ns)

	cs, err := o.clientset()
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", req.App, err)
	}
	if err := o.checkOwnership(ctx, cs, req, ns, svc != nil); err != nil {
		return nil, err
	}
	if err := o.ensureNamespace(ctx, cs, ns); err != nil {
		return nil, err
	}
	existing, err := cs.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: appSelector(req.App)})
	if err != nil {
		return nil, o.apiError(err, "apply %s: list deployments", req.App)
	}

	// want maps namespace/name of every Deployment to keep to its version.
	want := map[string]string{}
	for _, d := range req.Deployments {
		want[ns+"/"+DeploymentName(req.App, d.Version)] = d.Version
	}
	var stale []appsv1.Deployment
	for _, dep := range existing.Items {
		key := dep.Namespace + "/" + dep.Name
		version, ok := want[key]
		switch {
		case ok && dep.DeletionTimestamp != nil:
			// Applying to it would be undone by its deletion.
			return nil, fmt.Errorf("apply %s: deployment %s is being deleted (an uninstall or prune is finishing): apply again once it is gone", req.App, key)
		case ok && dep.Labels[LabelVersion] == version:
		case ok:
			// Same name, other version: make room before applying.
			if err := o.deleteDeployment(ctx, cs, &dep, metav1.DeletePropagationBackground); err != nil {
				return nil, fmt.Errorf("apply %s: %w", req.App, err)
			}
		default:
			stale = append(stale, dep)
		}
	}

	for _, dep := range deps {
		if _, err := apply(ctx, cs.AppsV1().Deployments(ns), dep, o.fieldManager); err != nil {
			return nil, o.apiError(err, "apply %s: deployment %s/%s", req.App, ns, dep.Metadata.Name)
		}
	}
	if svc != nil {
		if _, err := apply(ctx, cs.CoreV1().Services(ns), svc, o.fieldManager); err != nil {
			return nil, o.apiError(err, "apply %s: service %s/%s", req.App, ns, req.App)
		}
	}

	for i := range stale {
		if err := o.deleteDeployment(ctx, cs, &stale[i], metav1.DeletePropagationBackground); err != nil {
			return nil, fmt.Errorf("apply %s: prune: %w", req.App, err)
		}
	}
	if err := o.pruneServices(ctx, cs, req.App, ns, svc != nil); err != nil {
		return nil, err
	}
	return &model.ApplyResponse{
		Success: true,
		Message: fmt.Sprintf("applied %d deployment(s) of %s to namespace %s, pruned %d", len(deps), req.App, ns, len(stale)),
	}, nil
}

// ensureNamespace creates ns when it does not exist, labelled as ours; an
// existing namespace is left exactly as it is.
func (o *operator) ensureNamespace(ctx context.Context, cs kubeclient.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return o.apiError(err, "get namespace %s", ns)
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{LabelManagedBy: ManagedBy}}}
	_, err = cs.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{FieldManager: o.fieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return o.apiError(err, "create namespace %s", ns)
	}
	return nil
}

// checkOwnership fails with ErrNotManaged when an object already holds one
// of req's target names (the Service's only when withService) without our
// labels for req.App: applying would take over (and change) something
// singlecloud did not make.
func (o *operator) checkOwnership(ctx context.Context, cs kubeclient.Interface, req *model.ApplyRequest, ns string, withService bool) error {
	for _, d := range req.Deployments {
		name := DeploymentName(req.App, d.Version)
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return o.apiError(err, "apply %s: get deployment %s/%s", req.App, ns, name)
		}
		if err := owned("deployment", ns, name, dep.Labels, req.App); err != nil {
			return fmt.Errorf("apply %s: %w", req.App, err)
		}
	}
	if !withService {
		return nil
	}
	svc, err := cs.CoreV1().Services(ns).Get(ctx, req.App, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return o.apiError(err, "apply %s: get service %s/%s", req.App, ns, req.App)
	}
	if err := owned("service", ns, req.App, svc.Labels, req.App); err != nil {
		return fmt.Errorf("apply %s: %w", req.App, err)
	}
	return nil
}

// owned returns nil when labels say the object belongs to app, else an
// ErrNotManaged that tells the admin what to do.
func owned(kind, ns, name string, labels map[string]string, app string) error {
	if labels[LabelManagedBy] != ManagedBy {
		return fmt.Errorf("%w: %s %s/%s exists and is not managed by singlecloud: rename the application or remove it", ErrNotManaged, kind, ns, name)
	}
	if labels[LabelName] != app {
		return fmt.Errorf("%w: %s %s/%s belongs to singlecloud application %q: rename the application", ErrNotManaged, kind, ns, name, labels[LabelName])
	}
	return nil
}

// deleteDeployment deletes one of our Deployments, preconditioned on its
// UID so that a replacement made meanwhile is not hit; gone is not an
// error.
func (o *operator) deleteDeployment(ctx context.Context, cs kubeclient.Interface, dep *appsv1.Deployment, propagation metav1.DeletionPropagation) error {
	opts := metav1.DeleteOptions{PropagationPolicy: &propagation}
	if dep.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(dep.UID))
	}
	err := cs.AppsV1().Deployments(dep.Namespace).Delete(ctx, dep.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return o.apiError(err, "delete deployment %s/%s", dep.Namespace, dep.Name)
	}
	return nil
}

// pruneServices deletes app's Services other than ns/app (and that one too
// unless keep): what a namespace change or the last port's removal left.
func (o *operator) pruneServices(ctx context.Context, cs kubeclient.Interface, app, ns string, keep bool) error {
	list, err := cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: appSelector(app)})
	if err != nil {
		return o.apiError(err, "apply %s: list services", app)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if keep && s.Namespace == ns && s.Name == app {
			continue
		}
		if err := o.deleteService(ctx, cs, s); err != nil {
			return fmt.Errorf("apply %s: prune: %w", app, err)
		}
	}
	return nil
}

// deleteService deletes one of our Services; gone is not an error.
func (o *operator) deleteService(ctx context.Context, cs kubeclient.Interface, s *corev1.Service) error {
	opts := metav1.DeleteOptions{}
	if s.UID != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(s.UID))
	}
	err := cs.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return o.apiError(err, "delete service %s/%s", s.Namespace, s.Name)
	}
	return nil
}
