package zke

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

// fingerprintVersion prefixes every hashed text, so that a change of what
// a step fingerprints can be made visible as one (bump it: every resumed
// step then runs once).
const fingerprintVersion = "zke-step-inputs/v1\n"

// fingerprint is the hex SHA-256 of v's JSON form, which is canonical for
// the values hashed here: struct fields in declaration order, map keys
// sorted, slices in the order the steps use them.
func fingerprint(step string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("fingerprint %s: %w", step, err)
	}
	sum := sha256.Sum256(append([]byte(fingerprintVersion+step+"\n"), b...))
	return hex.EncodeToString(sum[:]), nil
}

// contentHash is the hex SHA-256 of data: what a fingerprint holds of a
// file (certificates and keys among them), and what a Verify compares
// with sha256sum on the node.
func contentHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// nodeInputs is what every step's fingerprint holds of a node: who it is
// and where it is reached.
type nodeInputs struct {
	Name, Address, InternalAddress string
	Roles                          []model.Role
}

func inputsOf(n node) nodeInputs {
	return nodeInputs{Name: n.Name, Address: n.Address, InternalAddress: n.InternalAddress, Roles: n.Roles}
}

// errNoPKI: a fingerprint or check that needs the certificates ran
// before the certificates step made them.
var errNoPKI = errors.New("no certificates yet: the certificates step has not run")

// certificatesFingerprint hashes what the certificates step writes: the
// cluster's PKI input (name, domain, service network, every node's
// addresses and roles) and, per node, every file it gets, by path, mode
// and content hash (the CAs' certificates among them, and the API server
// URL in the kubeconfigs).
func (r *run) certificatesFingerprint() (string, error) {
	b := r.snapshot().PKI
	if b == nil {
		return "", errNoPKI
	}
	server, err := r.apiServerURL()
	if err != nil {
		return "", err
	}
	type file struct {
		Mode uint32
		Hash string
	}
	type nodeFiles struct {
		Node    nodeInputs
		Files   map[string]file
		Missing bool
	}
	in := struct {
		Cluster, Domain, ServiceCIDR string
		CAs                          []string
		Nodes                        []nodeFiles
	}{Cluster: r.cfg.Name, Domain: r.cfg.ClusterDomain, ServiceCIDR: r.cfg.ServiceCIDR,
		CAs: []string{contentHash([]byte(b.ClusterCA.Cert)), contentHash([]byte(b.EtcdCA.Cert)), contentHash([]byte(b.FrontProxyCA.Cert))}}
	for _, n := range r.nodes {
		nf := nodeFiles{Node: inputsOf(n), Files: map[string]file{}}
		files, err := b.Files(pkiNode(n), pki.FileOptions{Prefix: n.PrefixPath, Server: server, ClusterName: r.cfg.Name})
		if errors.Is(err, pki.ErrMissing) {
			// A node the PKI has no certificates for yet (added
			// since): an input like any other, not a failure.
			nf.Missing = true
		} else if err != nil {
			return "", err
		}
		for p, f := range files {
			nf.Files[p] = file{Mode: uint32(f.Mode), Hash: contentHash(f.Data)}
		}
		in.Nodes = append(in.Nodes, nf)
	}
	return fingerprint(stepCertificates, in)
}

// imagesFingerprint hashes the images each node must have, in Docker and
// (workers) in containerd, with the sockets they are looked up through.
// Where they come from (the image archive, a registry) is not an input:
// an image that is there is there.
func (r *run) imagesFingerprint() (string, error) {
	type nodeImages struct {
		Node                           nodeInputs
		DockerSocket, ContainerdSocket string
		Docker, Containerd             []string
	}
	var in []nodeImages
	for _, n := range r.nodes {
		ni := nodeImages{Node: inputsOf(n), DockerSocket: n.DockerSocket, ContainerdSocket: n.ContainerdSocket, Docker: r.imagesFor(n)}
		if n.HasRole(model.RoleWorker) {
			ni.Containerd = r.podImages()
		}
		in = append(in, ni)
	}
	return fingerprint(stepImages, in)
}

// etcdFingerprint hashes every etcd member's container spec, as the
// State fixes it (image, addresses, --initial-cluster), and the members
// that have joined.
func (r *run) etcdFingerprint() (string, error) {
	st := r.snapshot()
	type member struct {
		Node nodeInputs
		Spec runtime.ContainerSpec
	}
	in := struct {
		Members []member
		Joined  []string
	}{Joined: slices.Sorted(slices.Values(st.EtcdMembers))}
	for _, n := range withRole(r.nodes, model.RoleEtcd) {
		in.Members = append(in.Members, member{Node: inputsOf(n), Spec: r.etcdSpecOf(n, st)})
	}
	return fingerprint(stepEtcd, in)
}

// etcdSpecOf is the spec of n's etcd as st fixes its membership (an
// empty --initial-cluster when n has not joined).
func (r *run) etcdSpecOf(n node, st State) runtime.ContainerSpec {
	initial := st.EtcdInitialCluster[n.Name]
	return r.etcdSpec(n, initial, etcdClusterState(n, initial))
}

// controlPlaneFingerprint hashes the container specs of every
// controlplane node (which hold the images, the etcd endpoints, the
// networks and the cluster name).
func (r *run) controlPlaneFingerprint() (string, error) {
	type cp struct {
		Node  nodeInputs
		Specs []runtime.ContainerSpec
	}
	var in []cp
	for _, n := range withRole(r.nodes, model.RoleControlPlane) {
		in = append(in, cp{Node: inputsOf(n), Specs: r.controlPlaneSpecs(n)})
	}
	return fingerprint(stepControlPlane, in)
}

// controlPlaneSpecs are the containers of controlplane node n.
func (r *run) controlPlaneSpecs(n node) []runtime.ContainerSpec {
	specs := []runtime.ContainerSpec{r.apiServerSpec(n), r.controllerManagerSpec(n), r.schedulerSpec(n)}
	return append(specs, r.endpointSpecs(n)...)
}

// workersFingerprint hashes, per worker, the kubelet's configuration
// file, the preparation script, and the kubelet and kube-proxy specs
// (with the node's capabilities, from preflight). The kubelet spec is
// taken with the configured containerd socket only: where it resolves to
// on the node is checked by verifyWorkers, which compares the full spec.
func (r *run) workersFingerprint() (string, error) {
	type worker struct {
		Node                     nodeInputs
		KubeletConfig, Prepare   string
		Kubelet, KubeProxy       runtime.ContainerSpec
		ContainerdSocket, Server string
	}
	server, err := r.apiServerURL()
	if err != nil {
		return "", err
	}
	var in []worker
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		kc, err := kubeletConfig(n, r.cfg, r.cgroupDriver(n), r.kubeletResolvConf(n))
		if err != nil {
			return "", err
		}
		in = append(in, worker{Node: inputsOf(n), KubeletConfig: contentHash(kc), Prepare: prepareKubeletScript(n),
			Kubelet: r.kubeletSpec(n, nodeSocket{Configured: n.ContainerdSocket}), KubeProxy: r.kubeProxySpec(n),
			ContainerdSocket: n.ContainerdSocket, Server: server})
	}
	return fingerprint(stepWorkers, in)
}

// networkFingerprint hashes the pod network's inputs: the plugin, the pod
// network and the workers with the addresses routes go through, and, with
// flannel, its DaemonSet (image, interface) and net-conf.json, so that an
// update that changes them applies them. The pod CIDR of each node comes
// from Kubernetes, and verifyNetwork checks it.
func (r *run) networkFingerprint() (string, error) {
	in := struct {
		Plugin, ClusterCIDR string
		Workers             []nodeInputs
		FlannelImage        string   `json:",omitempty"`
		FlannelArgs         []string `json:",omitempty"`
		FlannelNetConf      string   `json:",omitempty"`
		FlannelAPI          []string `json:",omitempty"`
	}{Plugin: r.cfg.Network.Plugin, ClusterCIDR: r.cfg.ClusterCIDR}
	if r.runsFlannel() {
		c := r.flannelDaemonSet(nil).Spec.Template.Spec.Containers[0]
		in.FlannelImage, in.FlannelArgs = c.Image, c.Args
		in.FlannelNetConf, _ = r.flannelNetConf()
		for _, e := range r.flannelAPIEnv() {
			in.FlannelAPI = append(in.FlannelAPI, e.Name+"="+e.Value)
		}
	}
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		in.Workers = append(in.Workers, inputsOf(n))
	}
	return fingerprint(stepNetwork, in)
}

// addonsFingerprint hashes what the addons step applies: CoreDNS (image,
// Corefile, service IP) and each worker's roles, labels and taints.
func (r *run) addonsFingerprint() (string, error) {
	type worker struct {
		Node   nodeInputs
		Labels map[string]string
		Taints []model.Taint
	}
	in := struct {
		CoreDNSImage, Corefile, DNSServiceIP string
		Workers                              []worker
	}{CoreDNSImage: r.images[model.ImageCoreDNS], Corefile: r.corefile(), DNSServiceIP: r.cfg.ClusterDNSServiceIP}
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		in.Workers = append(in.Workers, worker{Node: inputsOf(n), Labels: maps.Clone(n.Labels), Taints: n.Taints})
	}
	return fingerprint(stepAddons, in)
}

// drainFingerprint hashes the nodes an update removes.
func (r *run) drainFingerprint() (string, error) {
	var in []nodeInputs
	for _, n := range r.removedNodes() {
		in = append(in, inputsOf(n))
	}
	return fingerprint(stepDrain, in)
}
