package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Independent statements of the allowlists, for the fuzz invariants: they
// are written apart from the validators so that a validator bug is not
// checked against itself.
var (
	fuzzUserRE     = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]{0,31}$`)
	fuzzNodePathRE = regexp.MustCompile(`^/[A-Za-z0-9/._+@-]*$`)
	fuzzFlagRE     = regexp.MustCompile(`^[a-z0-9-]{1,100}$`)
	fuzzIfaceRE    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,15}$`)
	fuzzImageRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/:@\[\]-]*$`)
)

// fuzzSeeds are the attacks of issue 8 and a few near misses, as request
// bodies. Each is applied on top of a valid cluster.
func fuzzSeeds() []string {
	node := func(extra string) string {
		return `{"nodes":[{"name":"n1","address":"10.0.0.1","roles":["controlplane","etcd"]},` +
			`{"name":"n2","address":"10.0.0.2","roles":["worker","etcd"]` + extra + `}]}`
	}
	return []string{
		`{}`,
		node(``),
		node(`,"kubelet":{"cgroupRoot":"/zke\nstaticPodPath: /etc/kubernetes/manifests"}`),
		node(`,"kubelet":{"cgroupRoot":"/zke-n2"}`),
		node(`,"kubelet":{"extraArgs":{"$(id)":"1"}}`),
		node(`,"kubelet":{"extraArgs":{"v":"$(id)"}}`),
		node(`,"kubelet":{"extraArgs":{"v":"2\n--root-dir=/"}}`),
		node(`,"kubelet":{"extraArgs":{"max-pods":"50"}}`),
		node(`,"prefixPath":"/opt/.*"`),
		node(`,"prefixPath":"/opt/zke"`),
		node(`,"containerdSocket":"/run/c'.sock"`),
		node(`,"sshUser":"-oProxyCommand=id"`),
		node(`,"labels":{"a\nb":"c"},"taints":[{"key":"k","value":"v\n","effect":"NoSchedule"}]`),
		`{"imageArchive":"../../etc/shadow"}`,
		`{"imageArchive":"/etc/shadow"}`,
		`{"imageArchive":"images.tar"}`,
		`{"images":{"etcd":"etcd:$(id)","coredns":"--privileged"}}`,
		`{"images":{"kubernetes":"registry.local:5000/zdnscloud/kubernetes:v1.36.3"}}`,
		`{"privateRegistries":[{"url":"https://u:p@r.local/x\n","user":"a\nb"}]}`,
		`{"network":{"plugin":"bridge","iface":"eth0;reboot"}}`,
		`{"sshUser":"root\nid"}`,
	}
}

// maxFuzzExtraNodes bounds the generated workers a fuzz input may ask for:
// beyond the cap, more only costs time.
const maxFuzzExtraNodes = 12000

// extraWorkers returns n valid workers with distinct names and addresses,
// so that a fuzz input can be a huge cluster without a huge body.
func extraWorkers(n int) []model.Node {
	nodes := make([]model.Node, n)
	for i := range nodes {
		nodes[i] = model.Node{Name: fmt.Sprintf("x%d", i), Address: fmt.Sprintf("10.%d.%d.%d", 100+i>>16, i>>8&255, i&255), Roles: []model.Role{worker}}
	}
	return nodes
}

// FuzzValidateCluster decodes a request body over a valid cluster, adds
// extra generated workers (a huge cluster without a huge body), applies
// the defaults and validates it as a create and as an update. It must never
// panic; its answer must be bounded (at most MaxReported violations and a
// summary, each of bounded length); and a config it accepts must satisfy
// every allowlist of what reaches a node or the server's files.
func FuzzValidateCluster(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s), uint16(0))
	}
	f.Add([]byte(`{}`), uint16(10000)) // 10,000 nodes
	f.Add([]byte(`{}`), uint16(MaxNodes-2))
	key := ed25519Key(f, "")
	base := func() model.ClusterConfig {
		c := model.ClusterConfig{
			Name: "prod", SSHUser: "root", SingleCloudAddress: "10.0.0.9:8088",
			Nodes: []model.Node{
				{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{cp, etcd}},
				{Name: "n2", Address: "10.0.0.2", Roles: []model.Role{worker, etcd}},
			},
		}
		c.ApplyDefaults()
		return c
	}
	f.Fuzz(func(t *testing.T, body []byte, extra uint16) {
		c := base()
		if json.Unmarshal(body, &c) != nil {
			return
		}
		c.Nodes = append(c.Nodes, extraWorkers(int(extra)%maxFuzzExtraNodes)...)
		c.SSHKey = key
		c.ApplyDefaults()
		if err := ValidateCreate(c); err == nil {
			checkAllowlisted(t, c)
		} else {
			checkBounded(t, err)
		}
		old := base()
		old.SSHKey = key
		if err := ValidateUpdate(old, c); err == nil {
			checkAllowlisted(t, c)
		} else {
			checkBounded(t, err)
		}
	})
}

// checkBounded asserts that err is nil or a bounded Errors.
func checkBounded(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var errs Errors
	if !errors.As(err, &errs) || !errors.Is(err, ErrInvalid) || len(errs) == 0 {
		t.Fatalf("error %v (%T) is not a non-empty validation.Errors", err, err)
	}
	if len(errs) > MaxReported+1 {
		t.Fatalf("%d violations, want at most %d", len(errs), MaxReported+1)
	}
	for i, fe := range errs {
		if len(fe.Field) > maxFieldLen || len(fe.Reason) > maxReasonLen || fe.Reason == "" {
			t.Fatalf("violation %d is %d+%d bytes long (or has no reason)", i, len(fe.Field), len(fe.Reason))
		}
		if fe.Field == "" && (i != len(errs)-1 || !strings.HasPrefix(fe.Reason, "…and ")) {
			t.Fatalf("violation %d has no field: %q", i, fe.Reason)
		}
	}
}

// checkAllowlisted asserts the invariants of an accepted config.
func checkAllowlisted(t *testing.T, c model.ClusterConfig) {
	t.Helper()
	fail := func(what, v string) { t.Fatalf("accepted %s %q", what, v) }
	if len(c.Nodes) > MaxNodes {
		t.Fatalf("accepted %d nodes", len(c.Nodes))
	}
	if !fuzzUserRE.MatchString(c.SSHUser) {
		fail("sshUser", c.SSHUser)
	}
	if c.Network.Iface != "" && !fuzzIfaceRE.MatchString(c.Network.Iface) {
		fail("network.iface", c.Network.Iface)
	}
	if a := c.ImageArchive; a != "" && (!filepath.IsLocal(a) || strings.Contains(a, "\\") || hasControlFuzz(a)) {
		fail("imageArchive", a)
	}
	for k, ref := range c.Images {
		if !fuzzImageRE.MatchString(ref) || strings.HasPrefix(ref, "-") {
			fail("images."+k, ref)
		}
	}
	for _, r := range c.PrivateRegistries {
		if hasControlFuzz(r.URL) || strings.ContainsAny(r.URL, " @?#") || hasControlFuzz(r.User) {
			fail("privateRegistries url/user", r.URL+" "+r.User)
		}
	}
	for _, n := range c.Nodes {
		if !fuzzUserRE.MatchString(n.SSHUser) {
			fail("node sshUser", n.SSHUser)
		}
		paths := []string{n.DockerSocket, n.ContainerdSocket, n.PrefixPath}
		if n.Kubelet.CgroupRoot != "" {
			paths = append(paths, n.Kubelet.CgroupRoot)
		}
		for _, p := range paths {
			if !fuzzNodePathRE.MatchString(p) || strings.Contains("/"+p+"/", "/../") {
				fail("node path", p)
			}
		}
		for name, v := range n.Kubelet.ExtraArgs {
			if !fuzzFlagRE.MatchString(name) || hasControlFuzz(v) || len(v) > 4096 {
				fail("kubelet flag", name+"="+v)
			}
		}
		for k, v := range n.Labels {
			if hasControlFuzz(k) || hasControlFuzz(v) || strings.ContainsAny(k+v, " \"'$;") {
				fail("label", k+"="+v)
			}
		}
		for _, tn := range n.Taints {
			if hasControlFuzz(tn.Key + tn.Value + tn.Effect) {
				fail("taint", tn.Key+"="+tn.Value)
			}
		}
	}
}

func hasControlFuzz(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar })
}

// TestFuzzAttackSeedsRejected checks that the attack seeds of the fuzz
// test are refused at the field they attack, and the plain ones accepted,
// so that the fuzz corpus starts on both sides of every allowlist.
func TestFuzzAttackSeedsRejected(t *testing.T) {
	key := ed25519Key(t, "")
	seeds := fuzzSeeds()
	want := map[int]string{
		2: "nodes[1].kubelet.cgroupRoot", 4: `nodes[1].kubelet.extraArgs["$(id)"]`, 6: `nodes[1].kubelet.extraArgs["v"]`,
		8: "nodes[1].prefixPath", 10: "nodes[1].containerdSocket", 11: "nodes[1].sshUser", 12: `nodes[1].labels["a\nb"]`,
		13: "imageArchive", 14: "imageArchive", 16: "images.coredns", 18: "privateRegistries[0].url", 19: "network.iface", 20: "sshUser",
	}
	// Seed 5 puts "$(id)" in a flag's value: accepted, as the value is
	// one argument of the kubelet's command line, never shell text.
	for i, s := range seeds {
		c := model.ClusterConfig{Name: "prod", SSHUser: "root", SingleCloudAddress: "10.0.0.9:8088", Nodes: []model.Node{
			{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{cp, etcd}}, {Name: "n2", Address: "10.0.0.2", Roles: []model.Role{worker, etcd}},
		}}
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			t.Fatalf("seed %d does not decode: %v", i, err)
		}
		c.SSHKey = key
		c.ApplyDefaults()
		errs := fieldErrors(t, ValidateCreate(c))
		field, attack := want[i]
		switch {
		case !attack && errs != nil:
			t.Errorf("seed %d %s: rejected: %v", i, s, errs)
		case attack && (errs == nil || errs[0].Field != field):
			t.Errorf("seed %d %s: violations %q, want first %q", i, s, errs.Fields(), field)
		}
	}
	c := model.ClusterConfig{Name: "prod", SSHUser: "root", SSHKey: key, SingleCloudAddress: "10.0.0.9:8088",
		Nodes: append([]model.Node{{Name: "n1", Address: "10.0.0.1", Roles: []model.Role{cp, etcd}}}, extraWorkers(10000)...)}
	c.ApplyDefaults()
	checkViolations(t, ValidateCreate(c), []string{"nodes"}, "10001 nodes given; a cluster has at most 1000")
}
