// Package applications is the application-instance manager of seed 000: a
// resident manager that installs, configures and uninstalls application
// instances in environments (a ready cluster, or a group of registered
// hosts) through the operator of the environment's kind (seed 001, package
// operators). Each instance moves through phases — Waiting → Installing →
// Installed / Failed, Uninstalling → Uninstalled — on a state machine whose
// every transition is stored before it is published. Work is level-based,
// on client-go's work queue (an instance is never handled by two workers
// at once): a handler looks at the stored phase, does the one thing that
// phase asks for, and moves the phase on; a restart or a missed event
// re-reads the store and converges to the same result.
package applications

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// Phase is where an application instance is in its life (seed 000).
type Phase string

// The phases. PhaseNone is an instance not stored yet.
const (
	PhaseNone         Phase = ""
	PhaseWaiting      Phase = "Waiting"
	PhaseInstalling   Phase = "Installing"
	PhaseInstalled    Phase = "Installed"
	PhaseFailed       Phase = "Failed"
	PhaseUninstalling Phase = "Uninstalling"
	PhaseUninstalled  Phase = "Uninstalled"
)

// Errors the API maps to its status codes.
var (
	// ErrNotFound: no such environment or application instance.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts what exists (a duplicate
	// environment, an instance being uninstalled, an environment still
	// holding applications).
	ErrConflict = errors.New("conflict")
	// ErrDuplicate: an environment of that name exists already.
	ErrDuplicate = errors.New("duplicate")
	// ErrUnavailable: the environment could not answer (a cluster's API
	// server, a host's SSH); the message says which and why.
	ErrUnavailable = errors.New("environment unavailable")
)

// Instance is an application instance as the API shows it.
type Instance struct {
	Environment string                `json:"environment"`
	Name        string                `json:"name"`
	Spec        model.ApplicationSpec `json:"spec"`
	Phase       Phase                 `json:"phase"`
	// Message says why the instance is in its phase: what an install
	// waits for, why it failed.
	Message string `json:"message,omitempty"`
	// SpecHash identifies Spec; InstalledHash is the hash of the spec
	// that last reached Installed.
	SpecHash      string    `json:"specHash"`
	InstalledHash string    `json:"installedHash,omitempty"`
	Generation    int64     `json:"generation"`
	UpdatedBy     string    `json:"updatedBy,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	PhaseSince    time.Time `json:"phaseSince"`
	// Progress is the last health an install saw ("level 75: version v2
	// 0/1 ready on host2: CrashLoopBackOff"); it is not stored.
	Progress string `json:"progress,omitempty"`
}

// record is an instance as stored in BucketApplications.
type record struct {
	Env           string                `json:"env"`
	App           string                `json:"app"`
	Spec          model.ApplicationSpec `json:"spec"`
	SpecHash      string                `json:"specHash"`
	InstalledHash string                `json:"installedHash,omitempty"`
	Phase         Phase                 `json:"phase"`
	Message       string                `json:"message,omitempty"`
	Generation    int64                 `json:"generation"`
	UpdatedBy     string                `json:"updatedBy,omitempty"`
	CreatedAt     time.Time             `json:"createdAt"`
	UpdatedAt     time.Time             `json:"updatedAt"`
	PhaseSince    time.Time             `json:"phaseSince"`
	// LogSeq is the sequence number of the instance's last log line.
	LogSeq uint64 `json:"logSeq"`
}

func (r record) view(progress string) Instance {
	return Instance{Environment: r.Env, Name: r.App, Spec: r.Spec, Phase: r.Phase, Message: r.Message,
		SpecHash: r.SpecHash, InstalledHash: r.InstalledHash, Generation: r.Generation, UpdatedBy: r.UpdatedBy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, PhaseSince: r.PhaseSince, Progress: progress}
}

// instanceKey is the key of env's app in BucketApplications and the work
// queue.
func instanceKey(env, app string) string { return env + "/" + app }

// splitKey is instanceKey's inverse.
func splitKey(key string) (env, app string) {
	env, app, _ = strings.Cut(key, "/")
	return env, app
}

// specHash identifies a spec: the first 16 hex digits of the SHA-256 of
// its JSON (struct fields in a fixed order, so equal specs hash equal).
func specHash(s model.ApplicationSpec) string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// installTimeout is how long an install may wait for its replicas.
func installTimeout(s model.ApplicationSpec) time.Duration {
	if s.InstallTimeoutSeconds > 0 {
		return time.Duration(s.InstallTimeoutSeconds) * time.Second
	}
	return 300 * time.Second
}
