package zke

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// kubeletConfiguration is the part of the kubelet's
// KubeletConfiguration (kubelet.config.k8s.io/v1beta1) that zke sets. It
// is written by a YAML encoder, so that no value (a cgroupRoot, a path
// under a prefix) can add keys or documents to the file.
type kubeletConfiguration struct {
	APIVersion                  string            `json:"apiVersion"`
	Kind                        string            `json:"kind"`
	Address                     string            `json:"address"`
	Port                        int               `json:"port"`
	ReadOnlyPort                int               `json:"readOnlyPort"`
	Authentication              kubeletAuthn      `json:"authentication"`
	Authorization               kubeletAuthz      `json:"authorization"`
	TLSCertFile                 string            `json:"tlsCertFile"`
	TLSPrivateKeyFile           string            `json:"tlsPrivateKeyFile"`
	ClusterDomain               string            `json:"clusterDomain"`
	ClusterDNS                  []string          `json:"clusterDNS"`
	ContainerRuntimeEndpoint    string            `json:"containerRuntimeEndpoint"`
	CgroupDriver                string            `json:"cgroupDriver"`
	CgroupRoot                  string            `json:"cgroupRoot"`
	CgroupsPerQOS               bool              `json:"cgroupsPerQOS"`
	FailSwapOn                  bool              `json:"failSwapOn"`
	FailCgroupV1                bool              `json:"failCgroupV1"`
	PodLogsDir                  string            `json:"podLogsDir"`
	ResolvConf                  string            `json:"resolvConf"`
	StaticPodPath               string            `json:"staticPodPath"`
	SerializeImagePulls         bool              `json:"serializeImagePulls"`
	EvictionHard                map[string]string `json:"evictionHard"`
	ImageGCHighThresholdPercent int               `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  int               `json:"imageGCLowThresholdPercent"`
}

type kubeletAuthn struct {
	Anonymous struct {
		Enabled bool `json:"enabled"`
	} `json:"anonymous"`
	Webhook struct {
		Enabled bool `json:"enabled"`
	} `json:"webhook"`
	X509 struct {
		ClientCAFile string `json:"clientCAFile"`
	} `json:"x509"`
}

type kubeletAuthz struct {
	Mode string `json:"mode"`
}

// kubeletConfig is n's KubeletConfiguration as YAML, with resolvConf the
// resolver configuration its pods get (r.kubeletResolvConf). The kubelet
// runs in a container with its paths bind-mounted at the same place, so
// host and container paths agree.
func kubeletConfig(n node, cfg model.ClusterConfig, cgroupDriver, resolvConf string) ([]byte, error) {
	cgroupRoot := n.Kubelet.CgroupRoot
	if cgroupRoot == "" {
		cgroupRoot = "/"
	}
	if cgroupDriver == "" {
		cgroupDriver = "cgroupfs"
	}
	c := kubeletConfiguration{
		APIVersion:                  "kubelet.config.k8s.io/v1beta1",
		Kind:                        "KubeletConfiguration",
		Address:                     n.InternalAddress,
		Port:                        portKubelet,
		TLSCertFile:                 n.dir(sslPath(pki.KindKubeletServing.CertFile())),
		TLSPrivateKeyFile:           n.dir(sslPath(pki.KindKubeletServing.KeyFile())),
		ClusterDomain:               cfg.ClusterDomain,
		ClusterDNS:                  []string{cfg.ClusterDNSServiceIP},
		ContainerRuntimeEndpoint:    "unix://" + n.ContainerdSocket,
		CgroupDriver:                cgroupDriver,
		CgroupRoot:                  cgroupRoot,
		CgroupsPerQOS:               true,
		PodLogsDir:                  n.dir(dirPodLogs),
		ResolvConf:                  resolvConf,
		EvictionHard:                map[string]string{"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
		ImageGCHighThresholdPercent: 100,
		ImageGCLowThresholdPercent:  99,
	}
	c.Authentication.Webhook.Enabled = true
	c.Authentication.X509.ClientCAFile = n.dir(sslPath(pki.KindClusterCA.CertFile()))
	c.Authorization.Mode = "Webhook"
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode the kubelet configuration of %s: %w", n.Name, err)
	}
	return b, nil
}
