// Package hosts is singlecloud's host manager (seed 000): the registry of
// hosts an admin hands singlecloud (address, SSH login, sealed key,
// labels), a resident loop that checks every host's SSH connectivity on
// an interval with hysteresis, and the system information it collects
// from each host on connect and daily. It is level-based: what a host
// shows is recomputed by the next probe, so a restart or a missed probe
// converges to the same result.
package hosts

import (
	"maps"
	"time"

	"github.com/zdnscloud/singlecloud/hosts/sysinfo"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// Status is a host's SSH connectivity as the probes last saw it.
type Status string

const (
	// StatusUnknown: not probed yet since it was registered.
	StatusUnknown Status = "Unknown"
	// StatusReachable: the last probe logged in.
	StatusReachable Status = "Reachable"
	// StatusUnreachable: FailThreshold probes in a row could not log in.
	StatusUnreachable Status = "Unreachable"
)

// Host is one registered host as the API shows it: its registration
// without the key, and what the probes observed.
type Host struct {
	Name    string            `json:"name"`
	Address string            `json:"address"`
	Port    int               `json:"port"`
	User    string            `json:"user"`
	Labels  map[string]string `json:"labels,omitempty"`
	// HostKey is the host's SSH host key, pinned on first contact: a
	// later probe that meets another key fails.
	HostKey   string    `json:"hostKey,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Status    Status    `json:"status"`
	// Reason and Hint say why an Unreachable host is so, and what to do.
	Reason string `json:"reason,omitempty"`
	Hint   string `json:"hint,omitempty"`
	// StatusSince is when Status last changed.
	StatusSince time.Time `json:"statusSince"`
	// LastProbe is when the host was last probed.
	LastProbe time.Time `json:"lastProbe,omitempty"`
	// System is the system information collected on connect and daily.
	System *sysinfo.Info `json:"system,omitempty"`
}

// record is a host as stored: the Host, its sealed key and the count of
// probes in a row that failed (the hysteresis).
type record struct {
	Host
	SealedKey []byte `json:"sealedKey"`
	Failures  int    `json:"failures,omitempty"`
	// Generation counts the registrations' changes of where and how to
	// log in: a probe of an earlier one is not recorded.
	Generation int `json:"generation,omitempty"`
}

// clone returns a copy of r sharing nothing mutable with it.
func (r record) clone() record {
	c := r
	c.Labels = maps.Clone(r.Labels)
	c.SealedKey = append([]byte(nil), r.SealedKey...)
	if r.System != nil {
		s := *r.System
		s.Disks = append([]sysinfo.Disk(nil), r.System.Disks...)
		s.Runtimes = append([]sysinfo.Runtime(nil), r.System.Runtimes...)
		s.Warnings = append([]string(nil), r.System.Warnings...)
		c.System = &s
	}
	return c
}

// defaults fills the registration's defaults (port 22, user root).
func defaults(s model.HostSpec) model.HostSpec {
	if s.Port == 0 {
		s.Port = 22
	}
	if s.User == "" {
		s.User = "root"
	}
	return s
}
