package zke

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// adminAccessTimeout bounds the wait for every API server to authorize
// the admin user once its binding is written: their RBAC caches follow
// the binding within a second or two.
const adminAccessTimeout = time.Minute

// adminAccessRounds is how many answers in a row must authorize the
// admin: behind the shared endpoint consecutive requests reach different
// API servers, and each must have seen the binding.
const adminAccessRounds = 3

// adminAccessPoll is the pause between two access reviews: short, since
// the caches are usually there already.
const adminAccessPoll = 200 * time.Millisecond

// grantAdmin makes user (the admin certificate's) the only user of the
// admin binding, then waits until the API authorizes the admin
// certificate for everything: the kubeconfig written next works at once,
// and the user it replaced (a kubeconfig handed out before a rotation)
// is refused.
func (r *run) grantAdmin(ctx context.Context, rep *workflow.Reporter, user string) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	if err := ensureBinding(ctx, kube, pki.AdminBinding, pki.AdminClusterRole, user); err != nil {
		return err
	}
	admin, err := r.kubeClientAs(pki.ID(pki.KindAdmin))
	if err != nil {
		return err
	}
	streak := 0
	err = pollEvery(ctx, waitOn{rep: rep}, adminAccessPoll, adminAccessTimeout, "the API servers to authorize "+user, func(ctx context.Context) (bool, error) {
		review, err := admin.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}},
		}, metav1.CreateOptions{})
		switch {
		case err != nil:
			streak = 0
			return false, err
		case !review.Status.Allowed:
			streak = 0
			return false, fmt.Errorf("user %s is not authorized yet (%s)", user, review.Status.Reason)
		}
		streak++
		return streak >= adminAccessRounds, nil
	})
	if err != nil {
		return fmt.Errorf("admin access: %w", err)
	}
	rep.Report("", "user "+user+" administers the cluster")
	return nil
}
