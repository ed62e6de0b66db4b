package zke

import (
	"fmt"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/artifacts"
)

// ReleaseArchs are the node architectures zke has release files for, as
// the files name them.
func ReleaseArchs() []string { return []string{"amd64", "arm64"} }

// ReleaseFiles lists the release files zke installs on the nodes of a
// cluster at Kubernetes version, for a node architecture (ReleaseArchs):
// the kubelet and the CNI plugins' tarball, each with the address of its
// published checksum. What `singlecloud artifacts` lists and fetches; the
// artifacts step fetches the same.
func ReleaseFiles(version, arch string) ([]artifacts.File, error) {
	if _, ok := imageTable[version]; !ok {
		return nil, fmt.Errorf("Kubernetes %s is not supported; use one of %v", version, KubernetesVersions())
	}
	if releaseArch(arch) != arch {
		return nil, fmt.Errorf("architecture %q: zke has release files for %v", arch, ReleaseArchs())
	}
	return []artifacts.File{kubeletRelease(version, arch), cniPluginsRelease(arch)}, nil
}

// Images returns the image of every component zke runs for a cluster at
// Kubernetes version, with imageRepository (as a cluster's) applied, keyed
// like ClusterConfig.Images.
func Images(version, imageRepository string) (map[string]string, error) {
	return imagesOf(model.ClusterConfig{KubernetesVersion: version, ImageRepository: imageRepository})
}
