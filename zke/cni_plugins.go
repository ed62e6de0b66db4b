package zke

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/zke/artifacts"
)

// cniPluginsVersion is the containernetworking/plugins release whose
// plugins zke installs on workers whose containerd lacks them: the
// release the bridge pod network config is written for.
const cniPluginsVersion = "v1.9.0"

// defaultCNIBinDir is where containerd looks for CNI plugins when its
// config does not say (or cannot be read): containerd's default.
const defaultCNIBinDir = "/opt/cni/bin"

// maxCNIPluginSize bounds one plugin binary out of the release tarball
// (they are 3–6 MB each).
const maxCNIPluginSize = 64 << 20

// cniPluginsRelease is the plugins' release tarball for a node
// architecture (Docker's name for it: amd64, arm64), as the project
// publishes it on GitHub with its .sha256 beside it.
func cniPluginsRelease(arch string) artifacts.File {
	name := fmt.Sprintf("cni-plugins-linux-%s-%s.tgz", arch, cniPluginsVersion)
	u := "https://github.com/containernetworking/plugins/releases/download/" + cniPluginsVersion + "/" + name
	return artifacts.File{URL: u, ChecksumURL: u + ".sha256"}
}

// releaseArch maps a node's architecture, as Docker reports it, to the
// name release files use; "" when zke has no release files for it.
func releaseArch(dockerArch string) string {
	switch dockerArch {
	case "amd64", "x86_64":
		return "amd64"
	case "arm64", "aarch64":
		return "arm64"
	}
	return ""
}

// cniPlugin is one plugin binary read out of the release tarball.
type cniPlugin struct {
	name   string
	data   []byte
	sha256 string
}

// extractCNIPlugins reads the plugins named out of the release tarball
// at tgz (a verified file in the artifact cache). A plugin the tarball
// lacks is an error naming it.
func extractCNIPlugins(tgz string, names []string) ([]cniPlugin, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path.Base(tgz), err)
	}
	found := map[string]cniPlugin{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Base(tgz), err)
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		if h.Typeflag != tar.TypeReg || !slices.Contains(names, name) {
			continue
		}
		if h.Size > maxCNIPluginSize {
			return nil, fmt.Errorf("%s: plugin %s is %d bytes, more than %d", path.Base(tgz), name, h.Size, maxCNIPluginSize)
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxCNIPluginSize))
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path.Base(tgz), name, err)
		}
		sum := sha256.Sum256(data)
		found[name] = cniPlugin{name: name, data: data, sha256: hex.EncodeToString(sum[:])}
	}
	out := make([]cniPlugin, 0, len(names))
	for _, n := range names {
		p, ok := found[n]
		if !ok {
			return nil, fmt.Errorf("%s has no plugin %q", path.Base(tgz), n)
		}
		out = append(out, p)
	}
	return out, nil
}

// cniBinDirs are the directories n's containerd looks for CNI plugins in,
// as preflight read them from its CRI status; containerd's default when
// it did not say.
func (r *run) cniBinDirs(n node) []string {
	if dirs := r.factsOf(n).cri.cniBinDirs; len(dirs) > 0 {
		return dirs
	}
	return []string{defaultCNIBinDir}
}

// isCNIPluginPath reports whether p is where zke may have installed one
// of the plugins the pod network needs: one of their names in some
// absolute, clean directory other than /. A recorded path is deleted at
// clean-up only when it is.
func isCNIPluginPath(p string) bool {
	if !path.IsAbs(p) || path.Clean(p) != p || path.Dir(p) == "/" {
		return false
	}
	names, err := cniPluginsNeeded()
	return err == nil && slices.Contains(names, path.Base(p))
}

// cniPluginState is what the probe found of one plugin on a node.
type cniPluginState struct {
	// foundIn is the directory containerd will run it from; "" when it
	// is in none of them.
	foundIn string
	// occupied: the install target (the first directory's entry) holds
	// something that is not an executable file, which zke will not
	// overwrite.
	occupied bool
}

// cniPluginProbeScript prints, for each plugin, "found <name> <dir>" for
// the first of dirs holding it as an executable file, else "occupied
// <name>" when dirs[0]/<name> exists anyway, else "missing <name>".
func cniPluginProbeScript(plugins, dirs []string) string {
	q := func(ss []string) string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = shellQuote(s)
		}
		return strings.Join(out, " ")
	}
	return `for p in ` + q(plugins) + `; do
  found=
  for d in ` + q(dirs) + `; do
    if [ -f "$d/$p" ] && [ -x "$d/$p" ]; then found=$d; break; fi
  done
  if [ -n "$found" ]; then echo "found $p $found"
  elif [ -e ` + shellQuote(dirs[0]) + `/"$p" ] || [ -L ` + shellQuote(dirs[0]) + `/"$p" ]; then echo "occupied $p"
  else echo "missing $p"; fi
done
`
}

// parseCNIPluginProbe reads cniPluginProbeScript's output.
func parseCNIPluginProbe(out string) map[string]cniPluginState {
	states := map[string]cniPluginState{}
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(ln)
		switch {
		case len(f) >= 3 && f[0] == "found":
			states[f[1]] = cniPluginState{foundIn: strings.Join(f[2:], " ")}
		case len(f) == 2 && f[0] == "occupied":
			states[f[1]] = cniPluginState{occupied: true}
		case len(f) == 2 && f[0] == "missing":
			states[f[1]] = cniPluginState{}
		}
	}
	return states
}
