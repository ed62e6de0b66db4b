package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// goListTimeout bounds `go list -deps`: a second or two with a warm build
// cache, longer on a cold one.
const goListTimeout = 2 * time.Minute

// TestServerLinksOnlyTheAPIGroupsItUses guards the server's memory at
// start (issue 11): client-go's clientset, its scheme and its apply
// configurations register every built-in API group when the program
// starts, about 10 MB of RSS. The server must reach Kubernetes through
// internal/kubeclient, which links only the groups it uses.
func TestServerLinksOnlyTheAPIGroupsItUses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goTool); err != nil {
		if goTool, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the dependencies with")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), goListTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", "github.com/zdnscloud/singlecloud/cmd/singlecloud").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes",
		"k8s.io/client-go/kubernetes/scheme",
		"k8s.io/client-go/discovery",
		"k8s.io/client-go/applyconfigurations",
		"github.com/zdnscloud/singlecloud/internal/kubeclient/kubeclienttest",
	}
	var groups []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("the server links %s: use internal/kubeclient instead (client-go's clientset registers every API group at start)", pkg)
			}
		}
		if strings.HasPrefix(pkg, "k8s.io/api/") {
			groups = append(groups, pkg)
		}
	}
	// core, apps, rbac, policy, authorization; a new one belongs in
	// kubeclient's scheme, and this bound with it.
	if maxGroups := 5; len(groups) > maxGroups {
		t.Errorf("the server links %d k8s.io/api packages, want at most %d: %s", len(groups), maxGroups, strings.Join(groups, " "))
	}
}
