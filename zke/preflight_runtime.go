package zke

import (
	"context"
	"errors"
	"fmt"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// checkRuntimes checks from node n that its Docker socket answers and, on
// a worker, that its containerd socket answers the CRI Version call the
// kubelet makes first: a kubelet whose runtime does not answer crash-loops,
// and the failure would otherwise surface minutes later as a component
// downstream that is not healthy. Each problem names the config field to
// set. The calls go through n's SSH connection, so they are made on the
// node, with its symlinks.
func (r *run) checkRuntimes(ctx context.Context, rep *workflow.Reporter, n node) ([]string, error) {
	var problems []string
	d, err := r.docker(n)
	if err != nil {
		return nil, err
	}
	if _, err := d.Ping(ctx); err != nil {
		problems = append(problems, fmt.Sprintf("Docker does not answer at %s (%v): start Docker, or set %s to the socket it listens on",
			n.DockerSocket, err, r.nodeField(n, "dockerSocket")))
	}
	if !n.HasRole(model.RoleWorker) {
		return problems, nil
	}
	s, err := r.resolveSocket(ctx, n, n.ContainerdSocket)
	if err != nil {
		return nil, err
	}
	if p := criSocketProblem(s, r.nodeField(n, "containerdSocket")); p != "" {
		return append(problems, p), nil
	}
	c, err := r.client(n)
	if err != nil {
		return nil, err
	}
	info, err := runtime.CRIVersion(ctx, c, s.Resolved, probeTimeout)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return append(problems, criCallProblem(s, err, r.nodeField(n, "containerdSocket"))), nil
	}
	where := s.Configured
	if s.Resolved != s.Configured {
		where += " (→ " + s.Resolved + ")"
	}
	rep.Logf(n.Name, "CRI runtime at %s: %s %s, API %s", where, info.RuntimeName, info.RuntimeVersion, info.RuntimeAPIVersion)
	cniProblems, err := r.checkCRIConfig(ctx, rep, n, c, s.Resolved)
	return append(problems, cniProblems...), err
}

// criSocketProblem says what is wrong with what the node has at the
// containerd socket path s ("" when it is a socket); field is the config
// field to set.
func criSocketProblem(s nodeSocket, field string) string {
	switch {
	case s.State == socketMissing && s.Resolved != "" && s.Resolved != s.Configured:
		return fmt.Sprintf("containerd socket %s leads to %s, which does not exist: start containerd, or set %s to the socket it listens on (grpc.address in its config.toml)",
			s.Configured, s.Resolved, field)
	case s.State == socketMissing:
		return fmt.Sprintf("containerd socket %s does not exist: start containerd, or set %s to the socket it listens on (grpc.address in its config.toml)",
			s.Configured, field)
	case s.State == socketOther:
		return fmt.Sprintf("%s is not a socket: set %s to the socket containerd listens on (grpc.address in its config.toml)", s.Configured, field)
	case s.Resolved == "":
		return fmt.Sprintf("containerd socket %s cannot be resolved on the node: set %s to the socket's real path", s.Configured, field)
	}
	return ""
}

// criCallProblem explains a failed CRI Version call on s.
func criCallProblem(s nodeSocket, err error, field string) string {
	if errors.Is(err, runtime.ErrCRIUnimplemented) {
		return fmt.Sprintf("the runtime at %s has no CRI v1 runtime service (%v): enable containerd's cri plugin (remove \"cri\" from disabled_plugins in its config.toml and restart it), or set %s to a socket that serves CRI",
			s.Configured, err, field)
	}
	return fmt.Sprintf("the runtime at %s does not answer the CRI version call (%v): start containerd, or set %s to the socket it listens on",
		s.Configured, err, field)
}
