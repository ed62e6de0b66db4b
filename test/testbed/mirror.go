package testbed

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// CNIVersion is the containernetworking/plugins release `make testbin`
// builds and packs into its file mirror (zke's cniPluginsVersion).
const CNIVersion = "v1.9.0"

// ArtifactMirrorEnv is the environment variable singlecloud reads its
// --artifact-mirror from.
const ArtifactMirrorEnv = "SINGLECLOUD_ARTIFACT_MIRROR"

// CNIPluginsRelease is the plugins' release tarball in the testbin's file
// mirror, at the path upstream publishes it under.
const CNIPluginsRelease = "mirror/github.com/containernetworking/plugins/releases/download/" + CNIVersion +
	"/cni-plugins-linux-amd64-" + CNIVersion + ".tgz"

// MirrorDir is the testbin's file mirror: the release files zke installs,
// laid out as <host>/<path> of their upstream addresses, each with its
// .sha256, as singlecloud's --artifact-mirror expects.
func MirrorDir() (string, error) {
	testbin, err := Testbin()
	return filepath.Join(testbin, "mirror"), err
}

// CNIPluginDir holds the plugins the testbin built (the contents of the
// mirror's release tarball), for tests that run pods without zke.
func CNIPluginDir() (string, error) {
	testbin, err := Testbin()
	return filepath.Join(testbin, "cni"), err
}

// ServeMirror serves dir over HTTP on a free loopback port until the
// process exits and returns its base address: the file mirror a test's
// singlecloud fetches release files from, as a user's would from a
// mirror on their network. The server is the test process's; nothing is
// served to the hosts, which get the files from singlecloud over SSH.
func ServeMirror(dir string) (string, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: file mirror %s: run make testbin", ErrMissing, dir)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("serve the file mirror: %w", err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // serves until the process exits
	return "http://" + l.Addr().String() + "/", nil
}
