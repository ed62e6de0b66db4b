package docker

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/validation"
)

// Labels on every container the operator makes: they are how it finds its
// containers again (it keeps no other record) and tells whether one runs
// the version's current spec.
const (
	labelManagedBy = "io.singlecloud.managed-by"
	managedBy      = "singlecloud"
	labelApp       = "io.singlecloud.app"
	labelVersion   = "io.singlecloud.version"
	labelSpecHash  = "io.singlecloud.spec-hash"
)

// containerName is replica i of an app's version: sc-<app>-<slug>-<i>.
func containerName(app, version string, i int) string {
	return fmt.Sprintf("sc-%s-%s-%d", app, validation.AppSlug(version), i)
}

// specHash identifies what one version's containers run: the first 16 hex
// digits of the sha256 of the deployment's JSON, without its size
// (Replicas, Percent: scaling a version keeps its containers) and with the
// default pull policy spelled out. Each version has its own hash, so a
// change to one version replaces only its containers.
func specHash(d model.VersionDeployment) string {
	d.Replicas, d.Percent = nil, nil
	if d.ImagePullPolicy == "" {
		d.ImagePullPolicy = "IfNotPresent"
	}
	b, err := json.Marshal(d)
	if err != nil { // a struct of strings, ints and slices always marshals
		panic(fmt.Sprintf("marshal a deployment: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// pullFlags maps a Kubernetes image pull policy to docker run's --pull.
var pullFlags = map[string]string{"": "missing", "IfNotPresent": "missing", "Always": "always", "Never": "never"}

// runArgv is the docker run of one replica: detached, restarted by the
// daemon unless stopped, on the host's network, labelled, with the
// version's environment, limits, pull policy, entrypoint and arguments.
// An invalid limit or pull policy is an error naming the version and the
// field.
func runArgv(app string, d model.VersionDeployment, name, hash string) ([]string, error) {
	argv := []string{"docker", "run", "-d", "--name", name, "--restart", "unless-stopped", "--network", "host",
		"--label", labelManagedBy + "=" + managedBy,
		"--label", labelApp + "=" + app,
		"--label", labelVersion + "=" + d.Version,
		"--label", labelSpecHash + "=" + hash,
	}
	for _, e := range d.Env {
		argv = append(argv, "-e", e.Name+"="+e.Value)
	}
	if d.Resources.CPULimit != "" {
		cpus, err := dockerCPUs(d.Resources.CPULimit)
		if err != nil {
			return nil, fmt.Errorf("version %s: resources.cpuLimit: %w", d.Version, err)
		}
		if cpus != "" {
			argv = append(argv, "--cpus", cpus)
		}
	}
	if d.Resources.MemoryLimit != "" {
		mem, err := dockerMemory(d.Resources.MemoryLimit)
		if err != nil {
			return nil, fmt.Errorf("version %s: resources.memoryLimit: %w", d.Version, err)
		}
		if mem != "" {
			argv = append(argv, "--memory", mem)
		}
	}
	pull, ok := pullFlags[d.ImagePullPolicy]
	if !ok {
		return nil, fmt.Errorf("version %s: imagePullPolicy: %q is not Always, IfNotPresent or Never", d.Version, d.ImagePullPolicy)
	}
	argv = append(argv, "--pull", pull)
	if len(d.Command) > 0 {
		argv = append(argv, "--entrypoint", d.Command[0], d.Image)
		argv = append(argv, d.Command[1:]...)
	} else {
		argv = append(argv, d.Image)
	}
	return append(argv, d.Args...), nil
}

// dockerCPUs turns a Kubernetes CPU quantity ("500m", "1.5") into
// --cpus's decimal cores ("0.5", "1.5"); zero is no limit (""). The
// quantity is checked against validation's bounds before it is converted,
// so that a huge one never wraps to a negative --cpus.
func dockerCPUs(q string) (string, error) {
	m, err := validation.CPUMillis(q, true)
	if err != nil || m == 0 {
		return "", err
	}
	return strconv.FormatFloat(float64(m)/1000, 'f', -1, 64), nil
}

// dockerMemory turns a Kubernetes memory quantity ("128Mi", "1G") into
// --memory's bytes; zero is no limit (""). Bounded as dockerCPUs, so that
// a huge one never wraps to --memory 0.
func dockerMemory(q string) (string, error) {
	b, err := validation.MemoryBytes(q, true)
	if err != nil || b == 0 {
		return "", err
	}
	return strconv.FormatInt(b, 10), nil
}

// ourFilters select the containers the operator made for app.
func ourFilters(app string) []string {
	return []string{"--filter", "label=" + labelManagedBy + "=" + managedBy, "--filter", "label=" + labelApp + "=" + app}
}

// listFormat prints one JSON object per container: its name, spec hash
// and state, e.g.
//
//	{"name":"sc-web-v1-0","specHash":"0123456789abcdef","state":"running"}
//
// about 80 bytes a container, far below the transport's output cap.
const listFormat = `{"name":{{json .Names}},"specHash":{{json (.Label "` + labelSpecHash + `")}},"state":{{json .State}}}`

// listArgv lists app's containers on a host for Apply (listFormat).
func listArgv(app string) []string {
	return append(append([]string{"docker", "ps", "-a", "--no-trunc"}, ourFilters(app)...), "--format", listFormat)
}

// idsArgv lists the full ids of app's containers on a host, one a line.
func idsArgv(app string) []string {
	return append([]string{"docker", "ps", "-a", "-q", "--no-trunc"}, ourFilters(app)...)
}

// inspectFormat prints one JSON object per container with what its
// readiness depends on, e.g.
//
//	{"name":"/sc-web-v1-0","version":"v1","specHash":"0123456789abcdef","status":"running","running":true,"restarting":false,"startedAt":"2024-05-01T10:00:00.123456789Z","exitCode":0,"health":"","restartCount":0}
//
// about 250 bytes a container, where a plain docker inspect prints
// several kilobytes.
const inspectFormat = `{"name":{{json .Name}},` +
	`"version":{{json (index .Config.Labels "` + labelVersion + `")}},` +
	`"specHash":{{json (index .Config.Labels "` + labelSpecHash + `")}},` +
	`"status":{{json .State.Status}},"running":{{json .State.Running}},"restarting":{{json .State.Restarting}},` +
	`"startedAt":{{json .State.StartedAt}},"exitCode":{{json .State.ExitCode}},` +
	`"health":{{if .State.Health}}{{json .State.Health.Status}}{{else}}""{{end}},` +
	`"restartCount":{{json .RestartCount}}}`

// inspectArgv inspects the given containers (inspectFormat).
func inspectArgv(ids []string) []string {
	return append([]string{"docker", "inspect", "--type", "container", "--format", inspectFormat}, ids...)
}

// removeArgv force-removes containers (and their anonymous volumes); a
// container already gone is not an error for docker rm -f.
func removeArgv(names []string) []string {
	return append([]string{"docker", "rm", "-f", "-v"}, names...)
}

// versionArgv asks a host's Docker daemon for its version.
func versionArgv() []string {
	return []string{"docker", "version", "--format", "{{.Server.Version}}"}
}

// listed is one container as listArgv prints it.
type listed struct {
	Name     string `json:"name"`
	SpecHash string `json:"specHash"`
	State    string `json:"state"`
}

// container is one container as inspectArgv prints it.
type container struct {
	Name         string    `json:"name"`
	Version      string    `json:"version"`
	SpecHash     string    `json:"specHash"`
	Status       string    `json:"status"`
	Running      bool      `json:"running"`
	Restarting   bool      `json:"restarting"`
	StartedAt    time.Time `json:"startedAt"`
	ExitCode     int       `json:"exitCode"`
	Health       string    `json:"health"`
	RestartCount int       `json:"restartCount"`
}

// parseList parses listArgv's output.
func parseList(out []byte) ([]listed, error) {
	return parseLines(out, func(l *listed) { l.Name = firstName(l.Name) })
}

// parseInspect parses inspectArgv's output.
func parseInspect(out []byte) ([]container, error) {
	return parseLines(out, func(c *container) { c.Name = strings.TrimPrefix(c.Name, "/") })
}

// parseIDs parses idsArgv's output.
func parseIDs(out []byte) []string {
	return strings.Fields(string(out))
}

// parseLines decodes one JSON object a non-empty line.
func parseLines[T any](out []byte, fix func(*T)) ([]T, error) {
	var res []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), len(out)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("line %d of docker's output, %q: %w", n, shorten(string(line), 200), err)
		}
		fix(&v)
		res = append(res, v)
	}
	return res, sc.Err()
}

// firstName is a container's own name in docker ps's Names, which lists
// the names links gave it too, separated by commas.
func firstName(names string) string {
	for _, n := range strings.Split(names, ",") {
		if !strings.Contains(n, "/") {
			return n
		}
	}
	return names
}

func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
