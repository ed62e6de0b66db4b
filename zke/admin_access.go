package zke

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// adminAccessTimeout bounds the wait for every API server to authorize
// the admin user once its binding is written: their RBAC caches follow
// the binding within a second or two.
const adminAccessTimeout = time.Minute

// adminAccessPoll is the pause between two access reviews: short, since
// the caches are usually there already.
const adminAccessPoll = 200 * time.Millisecond

// grantAdmin makes user (the admin certificate's) the only user of the
// admin binding, then waits until every control-plane node's API server
// authorizes the admin certificate for everything (each asked directly:
// behind the endpoint one connection would reach only one of them): the
// kubeconfig written next works at once, and the user it replaced (a
// kubeconfig handed out before a rotation) is refused.
func (r *run) grantAdmin(ctx context.Context, rep *workflow.Reporter, user string) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	if err := ensureBinding(ctx, kube, pki.AdminBinding, pki.AdminClusterRole, user); err != nil {
		return err
	}
	for _, n := range withRole(r.nodes, model.RoleControlPlane) {
		admin, err := r.kubeClientVia(pki.ID(pki.KindAdmin), n, "https://"+hostPort(n.InternalAddress, portAPIServer))
		if err != nil {
			return err
		}
		err = pollEvery(ctx, waitOn{rep: rep, node: n.Name}, adminAccessPoll, adminAccessTimeout, "the API server on "+n.Name+" to authorize "+user, func(ctx context.Context) (bool, error) {
			review, err := admin.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}},
			}, metav1.CreateOptions{})
			switch {
			case err != nil:
				return false, err
			case !review.Status.Allowed:
				return false, fmt.Errorf("user %s is not authorized yet (%s)", user, review.Status.Reason)
			}
			return true, nil
		})
		if err != nil {
			return workflow.UserFixable(nodeErr(n, fmt.Errorf("admin access: %w", err),
				"the ClusterRoleBinding "+pki.AdminBinding+" grants the ClusterRole "+pki.AdminClusterRole+" to "+user+
					": check that both exist (kubectl get clusterrolebinding "+pki.AdminBinding+" -o yaml), then retry"))
		}
	}
	rep.Report("", "user "+user+" administers the cluster")
	return nil
}
