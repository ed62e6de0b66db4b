package zke

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// rootCAConfigMap is the ConfigMap kube-controller-manager publishes its
// --root-ca-file in, in every namespace; pods read it as the ca.crt of
// their service-account volume.
const rootCAConfigMap = "kube-root-ca.crt"

// rootCAPublishTimeout bounds the wait for kube-controller-manager to
// publish the trust bundle: it does so as it starts.
const rootCAPublishTimeout = 2 * time.Minute

// restartCoreDNS rolls CoreDNS's pods (a changed pod-template annotation,
// as kubectl rollout restart does) once the pods' CA bundle
// (kube-root-ca.crt) holds the signing cluster CA, and waits for the new
// pods: a client in a pod keeps the CA it read at its start.
func (r *run) restartCoreDNS(ctx context.Context, rep *workflow.Reporter) error {
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	b := r.snapshot().PKI
	if b == nil {
		return errors.New("no certificates yet")
	}
	if err := r.waitRootCA(ctx, rep, kube, b.ClusterCA.Cert); err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{"io.zke.restartedAt": r.in.clock().UTC().Format(time.RFC3339)}}}}})
	if err != nil {
		return err
	}
	if _, err := kube.AppsV1().Deployments(metav1.NamespaceSystem).Patch(ctx, corednsName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("restart CoreDNS on the new certificate authority: %w", err)
	}
	rep.Report("", "CoreDNS restarting to trust the new certificate authority (restart your own pods that talk to the API server now too: the old CA is dropped next)")
	return r.waitCoreDNS(ctx, rep, kube, corednsReadyTimeout)
}

// waitRootCA waits until kube-controller-manager has published caPEM in
// kube-system's kube-root-ca.crt.
func (r *run) waitRootCA(ctx context.Context, rep *workflow.Reporter, kube kubeclient.Interface, caPEM string) error {
	want := strings.TrimSpace(caPEM)
	err := poll(ctx, waitOn{rep: rep}, rootCAPublishTimeout, "kube-controller-manager to publish the new CA in "+rootCAConfigMap, func(ctx context.Context) (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, rootCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !strings.Contains(cm.Data["ca.crt"], want) {
			return false, errors.New("it still holds only the old CA")
		}
		return true, nil
	})
	if err != nil {
		return workflow.UserFixable(fmt.Errorf("%w: see docker logs %s on a control-plane node, then retry the rotation", err, containerControllerManager))
	}
	return nil
}
