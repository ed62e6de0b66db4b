package testbed_test

import (
	"testing"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

func TestZZTimingFull(t *testing.T) {
	testbed.StartHosts(t, 1, testbed.HostOptions{Docker: true})
}
func TestZZTimingSSHD(t *testing.T) {
	testbed.StartHosts(t, 10, testbed.HostOptions{})
}
