package testbed_test

import (
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke"
)

// TestImagesCarryZkeDefaults: the testbed's images of upstream programs
// are named as zke's defaults of each release, so that clusters on
// testbed hosts run them without an images setting (mkimage names them
// from zke.DefaultImages; these constants must follow).
func TestImagesCarryZkeDefaults(t *testing.T) {
	for _, c := range []struct {
		version string
		images  map[string]string
	}{
		{testbed.KubeVersion, map[string]string{
			model.ImageKubeAPIServer: testbed.KubeAPIServerImage, model.ImageKubeControllerManager: testbed.KubeControllerManagerImage,
			model.ImageKubeScheduler: testbed.KubeSchedulerImage, model.ImageKubeProxy: testbed.KubeProxyImage,
			model.ImageEtcd: testbed.EtcdImage, model.ImageCoreDNS: testbed.CoreDNSImage, model.ImageFlannel: testbed.FlannelImage,
			model.ImageHAProxy: testbed.HAProxyImage, model.ImageKeepalived: testbed.KeepalivedImage,
		}},
		{testbed.PreviousKubeVersion, map[string]string{
			model.ImageKubeAPIServer: testbed.PreviousKubeAPIServerImage, model.ImageKubeControllerManager: testbed.PreviousKubeControllerManagerImage,
			model.ImageKubeScheduler: testbed.PreviousKubeSchedulerImage, model.ImageKubeProxy: testbed.PreviousKubeProxyImage,
			model.ImageEtcd: testbed.PreviousEtcdImage, model.ImageCoreDNS: testbed.PreviousCoreDNSImage,
			model.ImageFlannel: testbed.FlannelImage, model.ImageHAProxy: testbed.HAProxyImage, model.ImageKeepalived: testbed.KeepalivedImage,
		}},
	} {
		defaults := zke.DefaultImages(c.version)
		if defaults == nil {
			t.Errorf("zke has no default images for %s", c.version)
			continue
		}
		for key, image := range c.images {
			if defaults[key] != image {
				t.Errorf("%s: the testbed's %s image is %q, zke's default %q", c.version, key, image, defaults[key])
			}
		}
	}
}
