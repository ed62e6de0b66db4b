package model

// Environment kinds: where applications run.
const (
	// EnvironmentKubernetes is a ready cluster (created or imported); its
	// environment is named after the cluster and exists while the
	// cluster does.
	EnvironmentKubernetes = "kubernetes"
	// EnvironmentHosts is a named group of registered hosts, chosen by a
	// label selector, whose containers run on each host's Docker.
	EnvironmentHosts = "hosts"
)

// Environment is where application instances run (seed 001).
type Environment struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Selector chooses the registered hosts of a hosts environment (a
	// Kubernetes label selector, like "group=web").
	Selector string `json:"selector,omitempty"`
}

// ApplicationSpec is what an admin applies to an environment: the
// application's versions, each with its image and share. Several versions
// at once make a canary: 90 % v1 and 10 % v2 is one apply.
type ApplicationSpec struct {
	// Version is the application's current version, a label for people
	// (the deployments say what runs).
	Version string `json:"version"`
	// Replicas is the application's total number of replicas, shared out
	// among the deployments that give a Percent.
	Replicas int `json:"replicas,omitempty"`
	// Namespace is the Kubernetes namespace of the application's objects;
	// "" is "default". Hosts environments ignore it.
	Namespace string `json:"namespace,omitempty"`
	// InstallTimeoutSeconds bounds how long an install waits for every
	// replica to be ready before the instance is Failed; 0 is 300.
	InstallTimeoutSeconds int                 `json:"installTimeoutSeconds,omitempty"`
	Deployments           []VersionDeployment `json:"deployments"`
}

// VersionDeployment is one version of an application: its image, its size
// (Replicas, or Percent of the spec's Replicas), and how it runs.
type VersionDeployment struct {
	Version  string   `json:"version"`
	Image    string   `json:"image"`
	Replicas *int     `json:"replicas,omitempty"`
	Percent  *float64 `json:"percent,omitempty"`
	// ImagePullPolicy is Always, IfNotPresent (the default) or Never.
	ImagePullPolicy string            `json:"imagePullPolicy,omitempty"`
	Ports           []ApplicationPort `json:"ports,omitempty"`
	Env             []EnvVar          `json:"env,omitempty"`
	Command         []string          `json:"command,omitempty"`
	Args            []string          `json:"args,omitempty"`
	Resources       Resources         `json:"resources,omitzero"`
}

// ApplicationPort is a port the application listens on.
type ApplicationPort struct {
	Name string `json:"name,omitempty"`
	Port int    `json:"port"`
	// Protocol is TCP (the default) or UDP.
	Protocol string `json:"protocol,omitempty"`
}

// EnvVar is one environment variable of the application's containers.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Resources are a container's requests and limits, in Kubernetes quantity
// notation ("100m", "128Mi"); on hosts, the limits become Docker's
// --cpus and --memory.
type Resources struct {
	CPURequest    string `json:"cpuRequest,omitempty"`
	MemoryRequest string `json:"memoryRequest,omitempty"`
	CPULimit      string `json:"cpuLimit,omitempty"`
	MemoryLimit   string `json:"memoryLimit,omitempty"`
}

// ApplyRequest is what the application-instance manager hands an operator
// (seed 001's ApplyDeploymentRequest): the application's versions with
// their replicas resolved (Percent already turned into Replicas, which is
// then never nil), and the hash of the spec they came from, which the
// operator records on what it makes.
type ApplyRequest struct {
	App         string              `json:"app"`
	Version     string              `json:"version"`
	Namespace   string              `json:"namespace,omitempty"`
	Deployments []VersionDeployment `json:"deployments"`
	SpecHash    string              `json:"specHash"`
}

// ApplyResponse is an operator's answer to an apply (seed 001).
type ApplyResponse struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// ApplicationStatus is an application's health in its environment (seed
// 001's ApplicationStatusResponse): a level 0–100 overall, per version
// (with the version's share of the desired replicas) and per node. A
// level is the ready share of the desired replicas: 100 when every desired
// replica is ready, 0 when none is.
type ApplicationStatus struct {
	App      string          `json:"app"`
	Healthy  HealthInfo      `json:"healthy"`
	Versions []VersionStatus `json:"versions"`
}

// VersionStatus is one version's health.
type VersionStatus struct {
	Version string       `json:"version"`
	Percent float64      `json:"percent"`
	Desired int          `json:"desired"`
	Ready   int          `json:"ready"`
	Healthy HealthInfo   `json:"healthy"`
	Nodes   []NodeStatus `json:"nodes"`
}

// NodeStatus is one node's (or host's) share of a version.
type NodeStatus struct {
	Node    string     `json:"node"`
	Desired int        `json:"desired"`
	Ready   int        `json:"ready"`
	Healthy HealthInfo `json:"healthy"`
	// Reason says why a replica there is not ready (its waiting reason,
	// exit code, or that it is missing).
	Reason string `json:"reason,omitempty"`
}

// HealthInfo is a health level, 0–100.
type HealthInfo struct {
	Level int `json:"level"`
}

// Level is ready/desired as a level 0–100, rounded down; 100 when nothing
// is desired.
func Level(ready, desired int) int {
	if desired <= 0 {
		return 100
	}
	if ready >= desired {
		return 100
	}
	if ready <= 0 {
		return 0
	}
	return ready * 100 / desired
}
