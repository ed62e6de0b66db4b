package zke

import (
	"path"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// serviceSpec is the base of every long-running component: host network,
// restarted by Docker unless zke stopped it, the node's certificates
// mounted read-only. cmd[0] is the program's name, which Docker looks up
// in the image's PATH: the upstream images are distroless (no shell), with
// their one program in /usr/local/bin.
func serviceSpec(n node, name, image string, cmd []string) runtime.ContainerSpec {
	return runtime.ContainerSpec{
		Name:          name,
		Image:         image,
		Entrypoint:    cmd[:1],
		Cmd:           cmd[1:],
		NetworkMode:   "host",
		RestartPolicy: "unless-stopped",
		Binds:         []string{n.dir(dirSSL) + ":" + dirSSL + ":ro"},
	}
}

func (r *run) etcdSpec(n node, initialCluster, clusterState string) runtime.ContainerSpec {
	s := serviceSpec(n, containerEtcd, r.images[model.ImageEtcd], etcdArgs(n, initialCluster, clusterState, "zke-"+r.cfg.Name))
	s.Binds = append(s.Binds, n.dir(dirEtcdData)+":"+dirEtcdData)
	return s
}

func (r *run) apiServerSpec(n node) runtime.ContainerSpec {
	return serviceSpec(n, containerAPIServer, r.images[model.ImageKubeAPIServer], apiServerArgs(n, r.cfg, withRole(r.nodes, model.RoleEtcd)))
}

func (r *run) controllerManagerSpec(n node) runtime.ContainerSpec {
	return serviceSpec(n, containerControllerManager, r.images[model.ImageKubeControllerManager], controllerManagerArgs(r.cfg))
}

func (r *run) schedulerSpec(n node) runtime.ContainerSpec {
	return serviceSpec(n, containerScheduler, r.images[model.ImageKubeScheduler], schedulerArgs())
}

// kubeletSpec runs the kubelet RKE-style: in a container sharing the
// host's pid and network namespaces, with every directory it hands to
// the container runtime mounted at the same path and rshared, so that
// volumes it mounts are seen by the pods, and every capability. cri is
// n's containerd socket as the node resolved it: its directories are
// bound at the same paths too when /run does not hold them (a socket
// elsewhere, or reached through a symlink that leads out of /run).
//
// The kubelet itself is the release binary the artifacts step installed
// (kubelet_binary.go), mounted read-only at kubeletInContainer; the image
// only gives it a root file system with mount(8), which it runs for the
// tmpfs of every pod's secrets and tokens.
func (r *run) kubeletSpec(n node, cri nodeSocket) runtime.ContainerSpec {
	args := kubeletArgs(n)
	args[0] = kubeletInContainer
	s := serviceSpec(n, containerKubelet, r.images[model.ImageKubelet], args)
	same := func(p string) string { return p + ":" + p }
	s.Binds = []string{
		kubeletBinary(n, r.cfg.KubernetesVersion) + ":" + kubeletInContainer + ":ro",
		same(n.dir(dirKubernetes)) + ":ro",
		same(n.dir(dirKubelet)) + ":rshared",
		same(n.dir(dirPodLogs)),
		same(n.dir(dirContainers)),
		same("/sys"),
		same("/dev"),
		same("/run"),
		same("/var/run"),
		same("/etc/cni"),
		same("/var/lib/cni"),
		same("/etc/resolv.conf") + ":ro",
		same("/etc/hosts") + ":ro",
	}
	s.Binds = append(s.Binds, r.resolvBinds(n)...)
	s.Binds = append(s.Binds, socketBinds(cri, bindTargets(s.Binds))...)
	s.Binds = append(s.Binds, containerdRootBind(r.factsOf(n).cri.rootDir, bindTargets(s.Binds))...)
	s.PidMode = "host"
	s.IpcMode = "host"
	r.privileged(n, &s)
	return s
}

// containerdRootBind binds containerd's root directory (root) into the
// kubelet's container at the same path, read-only, unless a bind in
// covered holds it already: the kubelet measures its image file system
// (the eviction manager's imagefs signals, image garbage collection) at
// the snapshotter's directory the CRI names, which it must be able to
// stat. rslave, so that a snapshot containerd unmounts on the host is not
// kept mounted in the kubelet's copy.
func containerdRootBind(root string, covered []string) []string {
	if !path.IsAbs(root) {
		return nil
	}
	root = path.Clean(root)
	for _, d := range covered {
		if root == d || d == "/" || strings.HasPrefix(root, d+"/") {
			return nil
		}
	}
	return []string{root + ":" + root + ":ro,rslave"}
}

// kubeletInContainer is where the kubelet's container finds the binary.
const kubeletInContainer = "/usr/local/bin/kubelet"

// kubeProxySpec runs kube-proxy with the host's network and the privileges
// it needs to program iptables and set its sysctls.
func (r *run) kubeProxySpec(n node) runtime.ContainerSpec {
	s := serviceSpec(n, containerKubeProxy, r.images[model.ImageKubeProxy], kubeProxyArgs(n, r.cfg))
	s.Binds = append(s.Binds, "/lib/modules:/lib/modules:ro", "/run:/run")
	r.privileged(n, &s)
	return s
}

// privileged gives s every capability: --privileged when the node allows
// it, otherwise cap-add ALL minus what the node's bounding set lacks,
// unconfined, with access to every device.
func (r *run) privileged(n node, s *runtime.ContainerSpec) {
	f := r.factsOf(n)
	if f.canPrivileged {
		s.Privileged = true
		return
	}
	s.CapAdd = []string{"ALL"}
	s.CapDrop = append([]string(nil), f.missingCaps...)
	s.SecurityOpt = []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined", "label=disable"}
	s.DeviceCgroupRules = []string{"a *:* rwm"}
}
