package testbed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// requestTimeout bounds one API request in these tests.
const requestTimeout = 10 * time.Second

// clientFor builds a clientset from a kubeconfig with a short timeout.
func clientFor(t *testing.T, kubeconfig []byte) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("parse kubeconfig: %v", err)
	}
	cfg.Timeout = requestTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

func TestControlPlaneServesKubernetes(t *testing.T) {
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	admin := clientFor(t, cp.Kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	v, err := admin.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if v.GitVersion != testbed.KubeVersion {
		t.Fatalf("/version gitVersion = %q, want %q", v.GitVersion, testbed.KubeVersion)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testbed-ns"}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace: %v", err)
	}
	if err := admin.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	// Deletion is finalised by the controller manager's namespace controller.
	waitFor(t, ctx, "namespace deleted", func() error {
		_, err := admin.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(errors.New("namespace still there"), err)
	})
}

func TestControlPlaneAuthentication(t *testing.T) {
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tests := []struct {
		name       string
		kubeconfig func() ([]byte, error)
		check      func(error) bool
		want       string
	}{
		{"static admin token", func() ([]byte, error) { return cp.TokenKubeconfig(cp.Token), nil }, func(err error) bool { return err == nil }, "success"},
		{"bad token", func() ([]byte, error) { return cp.TokenKubeconfig("not-a-token"), nil }, apierrors.IsUnauthorized, "401"},
		{"unprivileged client certificate", func() ([]byte, error) { return cp.ClientCertKubeconfig("someone", "some-group") }, apierrors.IsForbidden, "403"},
		{"extra admin client certificate", func() ([]byte, error) { return cp.ClientCertKubeconfig("another-admin", "system:masters") }, func(err error) bool { return err == nil }, "success"},
		{"wrong CA", func() ([]byte, error) { return cp.WrongCAKubeconfig(), nil }, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority")
		}, "x509 unknown authority"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc, err := tc.kubeconfig()
			if err != nil {
				t.Fatalf("kubeconfig: %v", err)
			}
			_, err = clientFor(t, kc).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if !tc.check(err) {
				t.Fatalf("list namespaces: err = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestControlPlaneKillAndRestart(t *testing.T) {
	cp := testbed.StartControlPlane(t, testbed.ControlPlaneOptions{})
	admin := clientFor(t, cp.Kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "survives"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	if err := cp.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("list namespaces after Kill succeeded, want an error")
	}

	if err := cp.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	// The same kubeconfig works again, and etcd kept the data.
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "survives", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace after Restart: %v", err)
	}

	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("list namespaces after Stop succeeded, want an error")
	}
	if err := cp.Restart(); err != nil {
		t.Fatalf("Restart after Stop: %v", err)
	}
	if _, err := admin.CoreV1().Namespaces().Get(ctx, "survives", metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace after Stop and Restart: %v", err)
	}
}

// waitFor polls check until it succeeds or ctx ends, then fails the test.
func waitFor(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = check(); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}
