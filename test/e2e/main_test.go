// Package e2e tests the singlecloud binary from the outside: it builds
// cmd/singlecloud, runs it as a process on loopback with a real bbolt file,
// and drives it through real HTTP and websockets against real Kubernetes
// API servers from the testbed.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/zdnscloud/singlecloud/test/testbed"
)

// binary is the singlecloud binary built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "singlecloud-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "singlecloud")
	build := exec.Command("go", "build", "-o", binary, "github.com/zdnscloud/singlecloud/cmd/singlecloud")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build singlecloud:", err)
		return 1
	}
	// Every singlecloud the tests start fetches release files (the CNI
	// plugins) from the testbin's file mirror, as a user's would from a
	// mirror on their network: the tests never reach the internet.
	if mirror, err := testbed.MirrorDir(); err == nil {
		base, err := testbed.ServeMirror(mirror)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv(testbed.ArtifactMirrorEnv, base)
	}
	return m.Run()
}
