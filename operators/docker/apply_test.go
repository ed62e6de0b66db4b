package docker

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/operators"
	"github.com/zdnscloud/singlecloud/zke/transport"
)

func TestDecide(t *testing.T) {
	want := []replica{
		{Dep: 0, Version: "v1", Index: 0, Name: "sc-web-v1-0", Host: "h1"},
		{Dep: 1, Version: "v2", Index: 0, Name: "sc-web-v2-0", Host: "h1"},
	}
	hashes := []string{"hash1", "hash2"}
	names := func(rs []replica) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		want   []replica
		have   []listed
		remove []string
		start  []string
	}{
		{name: "empty host", want: want, start: []string{"sc-web-v1-0", "sc-web-v2-0"}},
		{
			name: "all there, one exited, is left alone",
			want: want,
			have: []listed{{"sc-web-v2-0", "hash2", "running"}, {"sc-web-v1-0", "hash1", "exited"}},
		},
		{
			name:   "wrong hash under a wanted name is replaced",
			want:   want,
			have:   []listed{{"sc-web-v1-0", "old", "running"}, {"sc-web-v2-0", "hash2", "running"}},
			remove: []string{"sc-web-v1-0"},
			start:  []string{"sc-web-v1-0"},
		},
		{
			name:   "unwanted names removed (scaled down, old version)",
			want:   want,
			have:   []listed{{"sc-web-v1-0", "hash1", "running"}, {"sc-web-v1-3", "hash1", "running"}, {"sc-web-v0-0", "hash0", "running"}},
			remove: []string{"sc-web-v0-0", "sc-web-v1-3"},
			start:  []string{"sc-web-v2-0"},
		},
		{
			name:   "host that gets nothing is emptied",
			have:   []listed{{"sc-web-v1-1", "hash1", "running"}, {"sc-web-v2-0", "hash2", "exited"}},
			remove: []string{"sc-web-v1-1", "sc-web-v2-0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(tc.want, hashes, tc.have)
			if !reflect.DeepEqual(p.Remove, tc.remove) || !reflect.DeepEqual(names(p.Start), tc.start) {
				t.Errorf("remove %q start %q, want remove %q start %q", p.Remove, names(p.Start), tc.remove, tc.start)
			}
		})
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	f := newFakeHosts("Reachable", "Reachable", "Unreachable", "Reachable") // h3 is not used
	op := New(testEnv, f, nil, Options{Workers: 2})
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
		{Version: "v1", Image: "nginx:1", Replicas: intp(3)},
		{Version: "v2", Image: "nginx:2", Replicas: intp(1)},
	}}
	resp, err := op.Apply(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if *resp != (model.ApplyResponse{Success: true, Message: "4 containers on 3 hosts"}) {
		t.Errorf("response %+v", resp)
	}
	placed := []string{"sc-web-v1-0@h1", "sc-web-v2-0@h1", "sc-web-v1-1@h2", "sc-web-v1-2@h4"}
	if got := f.containers(); !slices.Equal(got, placed) {
		t.Errorf("containers %q, want %q", got, placed)
	}
	f.takeCalls()

	// Applying again changes nothing: one listing per reachable host.
	if _, err := op.Apply(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := f.takeCalls(); !slices.Equal(got, []string{"h1: docker ps", "h2: docker ps", "h4: docker ps"}) {
		t.Errorf("second apply ran %q", got)
	}

	// v1 scaled down keeps its containers on h1 and h2 and loses v1-2 on
	// h4; v2, with a new image, now starts at offset 2 (h4).
	req.Deployments = []model.VersionDeployment{{Version: "v1", Image: "nginx:1", Replicas: intp(2)}, {Version: "v2", Image: "nginx:3", Replicas: intp(1)}}
	f.docker["h4"]["unrelated"] = &fakeContainer{labels: map[string]string{}}
	if _, err := op.Apply(ctx, req); err != nil {
		t.Fatal(err)
	}
	want := []string{"h1: docker ps", "h1: docker rm", "h2: docker ps", "h4: docker ps", "h4: docker rm", "h4: docker run"}
	if got := f.takeCalls(); !slices.Equal(got, want) {
		t.Errorf("update ran %q, want %q", got, want)
	}
	placed = []string{"sc-web-v1-0@h1", "sc-web-v1-1@h2", "sc-web-v2-0@h4", "unrelated@h4"}
	if got := f.containers(); !slices.Equal(got, placed) {
		t.Errorf("containers %q, want %q", got, placed)
	}
}

func TestApplyErrors(t *testing.T) {
	ctx := context.Background()
	req := &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{{Version: "v1", Image: "nginx:1", Replicas: intp(2)}}}
	for _, tc := range []struct {
		name     string
		req      *model.ApplyRequest
		fail     func(host string, argv []string) error
		want     []string
		notReady bool
		ran      bool
	}{
		{
			name: "run fails on one host",
			req:  req,
			fail: func(host string, argv []string) error {
				if host == "h2" && argv[1] == "run" {
					return exitError(argv, "docker: Error response from daemon: pull access denied for nginx")
				}
				return nil
			},
			want: []string{"docker run sc-web-v1-1 on host h2", "pull access denied for nginx"},
			ran:  true,
		},
		{
			name: "host cannot be reached",
			req:  req,
			fail: func(host string, argv []string) error {
				if host == "h1" {
					return &transport.NodeError{Node: host, Op: "connect", Err: transport.ErrUnreachable}
				}
				return nil
			},
			want:     []string{"docker ps on host h1", "node unreachable"},
			notReady: true,
			ran:      true,
		},
		{
			name: "bad limit touches no host",
			req: &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
				{Version: "v1", Image: "nginx:1", Replicas: intp(1), Resources: model.Resources{MemoryLimit: "a lot"}}}},
			want: []string{"version v1: resources.memoryLimit"},
		},
		{
			name: "ports with more replicas than reachable hosts",
			req: &model.ApplyRequest{App: "web", Deployments: []model.VersionDeployment{
				{Version: "v1", Image: "nginx:1", Replicas: intp(3), Ports: []model.ApplicationPort{{Port: 80}}}}},
			want: []string{"version v1 has ports and 3 replicas but only 2 reachable hosts"},
		},
		{name: "no app", req: &model.ApplyRequest{}, want: []string{"names no application"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeHosts("Reachable", "Reachable")
			f.fail = tc.fail
			_, err := New(testEnv, f, nil, Options{}).Apply(ctx, tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to contain %q", err, w)
				}
			}
			if errors.Is(err, operators.ErrEnvironmentNotReady) != tc.notReady {
				t.Errorf("err = %v, not ready %v, want %v", err, !tc.notReady, tc.notReady)
			}
			var exit *transport.ExitError
			if tc.name == "run fails on one host" && !errors.As(err, &exit) {
				t.Errorf("the ExitError is not kept: %v", err)
			}
			if ran := len(f.takeCalls()) > 0; ran != tc.ran {
				t.Errorf("ran commands %v, want %v", ran, tc.ran)
			}
		})
	}
}
