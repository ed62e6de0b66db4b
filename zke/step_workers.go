package zke

import (
	"context"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// workers runs a kubelet and kube-proxy on every worker node, gates on
// kube-proxy's health and waits until each kubelet has registered its
// Node (Ready comes with the pod network, in the next step).
func (r *run) workers(ctx context.Context, rep *workflow.Reporter) error {
	ws := withRole(r.nodes, model.RoleWorker)
	err := workflow.ForEach(ctx, ws, nodeConcurrency, func(ctx context.Context, n node) error {
		c, err := r.client(n)
		if err != nil {
			return err
		}
		kubeletYAML, err := kubeletConfig(n, r.cfg, r.cgroupDriver(n), r.kubeletResolvConf(n))
		if err != nil {
			return nodeErr(n, err, "")
		}
		if err := c.Upload(ctx, kubeletConfigFile(n), kubeletYAML, pki.PublicMode); err != nil {
			return nodeErr(n, fmt.Errorf("write the kubelet configuration: %w", err), "")
		}
		if _, err := c.Exec(ctx, prepareKubeletScript(n), transport.ExecOptions{}); err != nil {
			return nodeErr(n, fmt.Errorf("prepare the kubelet's directories and cgroups: %w", err), "")
		}
		cri, err := r.resolveSocket(ctx, n, n.ContainerdSocket)
		if err != nil {
			return err
		}
		if err := r.ensure(ctx, rep, n, r.kubeletSpec(n, cri)); err != nil {
			return err
		}
		if err := r.ensure(ctx, rep, n, r.kubeProxySpec(n)); err != nil {
			return err
		}
		if err := r.waitPath(ctx, rep, n, componentHealthTimeout, "kube-proxy on "+n.Name+" healthy", r.workerPath(n)); err != nil {
			return r.pathErr(ctx, n, err, containerKubeProxy)
		}
		return nil
	})
	if err != nil {
		return err
	}
	kube, err := r.kubeClient()
	if err != nil {
		return err
	}
	for i, n := range ws {
		registered := pathLink{container: containerKubelet, what: "Node " + n.Name, probe: func(ctx context.Context) (bool, error) {
			_, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, fmt.Errorf("node %s not registered yet", n.Name)
			}
			return err == nil, err
		}}
		err := r.waitPath(ctx, rep, n, nodeReadyTimeout, "kubelet on "+n.Name+" registered", []pathLink{r.workerPath(n)[0], registered})
		if err != nil {
			return r.pathErr(ctx, n, err, containerKubelet)
		}
		rep.Advance(float64(i+1)/float64(len(ws)), n.Name, "kubelet registered")
	}
	return nil
}

// prepareKubeletScript creates the kubelet's directories and, when the
// node sets a cgroupRoot, that cgroup in every controller (the kubelet
// refuses a cgroupRoot that does not exist).
func prepareKubeletScript(n node) string {
	dirs := []string{n.dir(dirKubelet), n.dir(dirPodLogs), n.dir(dirContainers), "/etc/cni/net.d", "/var/lib/cni"}
	script := "set -e\nmkdir -p"
	for _, d := range dirs {
		script += " " + shellQuote(d)
	}
	script += "\n"
	if root := n.Kubelet.CgroupRoot; root != "" && root != "/" {
		q := shellQuote(path.Clean(root))
		script += `if [ -f /sys/fs/cgroup/cgroup.controllers ]; then mkdir -p /sys/fs/cgroup` + q + `
else for c in /sys/fs/cgroup/*/; do [ -L "${c%/}" ] || mkdir -p "${c%/}"` + q + `; done; fi
`
	}
	return script
}

// workerPath is what a worker's kube-proxy depends on, in order: the
// kubelet running and serving its /healthz (it registers the Node that
// kube-proxy waits for), then kube-proxy's own health.
func (r *run) workerPath(n node) []pathLink {
	return []pathLink{
		{container: containerKubelet, what: "kubelet /healthz", probe: func(ctx context.Context) (bool, error) {
			return r.localHTTPHealthz(ctx, n, portKubeletHealthz)
		}},
		{container: containerKubeProxy, what: "kube-proxy /healthz", probe: func(ctx context.Context) (bool, error) {
			return r.localHTTPHealthz(ctx, n, portKubeProxyHealth)
		}},
	}
}

// portKubeletHealthz is the kubelet's plain-HTTP health port on the
// node's 127.0.0.1 (its default).
const portKubeletHealthz = 10248

// downHint says what to do about a component that does not run. A
// kubelet that cannot reach its runtime names the field to set.
func (r *run) downHint(n node, down *ComponentDownError) string {
	if down.Component == containerKubelet && strings.Contains(down.LastError, "CRI") {
		return fmt.Sprintf("the kubelet cannot use the container runtime at %s: set %s to the socket containerd listens on (its CRI plugin enabled)",
			n.ContainerdSocket, r.nodeField(n, "containerdSocket"))
	}
	return fmt.Sprintf("see docker logs %s on %s", down.Component, n.Name)
}
