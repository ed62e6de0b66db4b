package zke

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// kubeadmDownloadTimeout bounds `go mod download` of one Kubernetes
// release: seconds from the module cache, minutes for the ~40 MB zip from
// the module proxy on a fresh machine.
const kubeadmDownloadTimeout = 10 * time.Minute

// TestImageTableMatchesKubeadm reads kubeadm's own constants from the
// k8s.io/kubernetes source of every release the image table knows, and
// checks that zke deploys the images kubeadm deploys for it: the same
// names in registry.k8s.io, the same tags (the release's for the
// components, kubeadm's etcd, CoreDNS and pause versions), kept releases
// included. The source is
// parsed, not imported: k8s.io/kubernetes is no dependency of this module.
// Without the source (offline, no go) it skips, except under CI=true,
// where it fails.
func TestImageTableMatchesKubeadm(t *testing.T) {
	for _, version := range slices.Sorted(maps.Keys(imageTable)) {
		t.Run(version, func(t *testing.T) {
			dir := kubernetesSource(t, version)
			want, err := kubeadmImages(dir, version)
			if err != nil {
				t.Fatalf("read kubeadm's images of %s from %s: %v", version, dir, err)
			}
			for _, key := range []string{model.ImageKubeAPIServer, model.ImageKubeControllerManager, model.ImageKubeScheduler,
				model.ImageKubeProxy, model.ImageEtcd, model.ImageCoreDNS, model.ImagePause} {
				if got := imageTable[version][key]; got != want[key] {
					t.Errorf("imageTable[%q][%q] = %q, but kubeadm %s deploys %q", version, key, got, version, want[key])
				}
			}
		})
	}
}

// kubernetesSource returns the directory of the k8s.io/kubernetes module
// at version, as `go mod download` reports it (downloading it if the
// module cache lacks it).
func kubernetesSource(t *testing.T, version string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (a failure under CI=true)", args...)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		unavailable("no go command to download k8s.io/kubernetes@%s: %v", version, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubeadmDownloadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", "k8s.io/kubernetes@"+version)
	// Outside this module, so that the download never touches go.mod.
	cmd.Dir = t.TempDir()
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr != nil || err != nil || mod.Error != "" || mod.Dir == "" {
		unavailable("go mod download k8s.io/kubernetes@%s: %v %s %s", version, err, mod.Error, strings.TrimSpace(string(out)))
	}
	return mod.Dir
}

// kubeadmImages computes, from kubeadm's source in dir, the image
// kubeadm deploys for each component of release version, keyed like
// ClusterConfig.Images: GetGenericImage's "<repository>/<name>:<tag>" with
// the default repository, CoreDNS under its coredns sub-repository, etcd at
// SupportedEtcdVersion's tag for the release's minor (DefaultEtcdVersion
// when the map lacks it, as kubeadm falls back).
func kubeadmImages(dir, version string) (map[string]string, error) {
	app := filepath.Join(dir, "cmd", "kubeadm", "app")
	consts, etcdMap, err := kubeadmConstants(filepath.Join(app, "constants", "constants.go"))
	if err != nil {
		return nil, err
	}
	defaults, _, err := kubeadmConstants(filepath.Join(app, "apis", "kubeadm", "v1beta4", "defaults.go"))
	if err != nil {
		return nil, err
	}
	imagesGo, err := os.ReadFile(filepath.Join(app, "images", "images.go"))
	if err != nil {
		return nil, err
	}
	// The naming rules this computation follows, as kubeadm spells them.
	for _, rule := range []string{`fmt.Sprintf("%s/%s:%s", prefix, image, tag)`, `fmt.Sprintf("%s/coredns", dnsImageRepository)`,
		`GetGenericImage(cfg.ImageRepository, "pause", constants.PauseVersion)`} {
		if !strings.Contains(string(imagesGo), rule) {
			return nil, fmt.Errorf("images.go no longer says %s: compute the image names as it now does", rule)
		}
	}
	minor, err := minorOf(version)
	if err != nil {
		return nil, err
	}
	etcdTag, ok := etcdMap(minor)
	if !ok {
		etcdTag = consts["DefaultEtcdVersion"]
	}
	repo := defaults["DefaultImageRepository"]
	want := map[string]string{
		model.ImageEtcd:    repo + "/" + consts["Etcd"] + ":" + etcdTag,
		model.ImageCoreDNS: repo + "/coredns/" + consts["CoreDNSImageName"] + ":" + consts["CoreDNSVersion"],
		model.ImagePause:   repo + "/pause:" + consts["PauseVersion"],
	}
	for key, name := range map[string]string{model.ImageKubeAPIServer: "KubeAPIServer", model.ImageKubeControllerManager: "KubeControllerManager",
		model.ImageKubeScheduler: "KubeScheduler", model.ImageKubeProxy: "KubeProxy"} {
		want[key] = repo + "/" + consts[name] + ":" + version
	}
	for key, ref := range want {
		if strings.Contains(ref, "/:") || strings.HasSuffix(ref, ":") || strings.HasPrefix(ref, "/") {
			return nil, fmt.Errorf("the %s image %q lacks a part: a constant kubeadm's source no longer defines", key, ref)
		}
	}
	return want, nil
}

// minorOf returns the minor of a version like v1.36.3.
func minorOf(version string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) < 2 {
		return 0, fmt.Errorf("version %q is not vMAJOR.MINOR.PATCH", version)
	}
	return strconv.Atoi(parts[1])
}

// kubeadmConstants parses a kubeadm source file and returns its top-level
// string constants and variables by name, and a lookup of its
// SupportedEtcdVersion map by Kubernetes minor. The map's keys are either
// literal minors (1.36) or uint8(getSkewedKubernetesVersion(n).Minor()),
// the running release's minor skewed by n (1.35).
func kubeadmConstants(file string) (map[string]string, func(minor int) (string, bool), error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, nil, err
	}
	strs := map[string]string{}
	var etcd *ast.CompositeLit
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
						strs[name.Name] = s
					}
				case *ast.CompositeLit:
					if name.Name == "SupportedEtcdVersion" {
						etcd = v
					}
				}
			}
		}
	}
	lookup := func(minor int) (string, bool) {
		if etcd == nil {
			return "", false
		}
		for _, elt := range etcd.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			lit, ok := kv.Value.(*ast.BasicLit)
			if !ok {
				continue
			}
			if k, ok := etcdMapKey(kv.Key, minor); ok && k == minor {
				s, err := strconv.Unquote(lit.Value)
				return s, err == nil
			}
		}
		return "", false
	}
	return strs, lookup, nil
}

// etcdMapKey evaluates a key of SupportedEtcdVersion for a kubeadm of
// release minor: a literal, or uint8(getSkewedKubernetesVersion(n).Minor()).
func etcdMapKey(e ast.Expr, minor int) (int, bool) {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.INT {
		k, err := strconv.Atoi(lit.Value)
		return k, err == nil
	}
	skew := 0
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || found {
			return !found
		}
		if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "getSkewedKubernetesVersion" || len(call.Args) != 1 {
			return true
		}
		var err error
		switch a := call.Args[0].(type) {
		case *ast.BasicLit:
			skew, err = strconv.Atoi(a.Value)
		case *ast.UnaryExpr:
			lit, ok := a.X.(*ast.BasicLit)
			if !ok || a.Op != token.SUB {
				return false
			}
			skew, err = strconv.Atoi(lit.Value)
			skew = -skew
		default:
			return false
		}
		found = err == nil
		return false
	})
	return minor + skew, found
}
