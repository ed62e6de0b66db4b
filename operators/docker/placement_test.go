package docker

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
)

func TestPlace(t *testing.T) {
	port := []model.ApplicationPort{{Port: 80}}
	for _, tc := range []struct {
		name    string
		hosts   []string
		deps    []model.VersionDeployment
		want    []string // container@host, in request order
		wantErr string
	}{
		{
			name:  "3 hosts, versions 3+1 spread",
			hosts: []string{"h3", "h1", "h2"}, // sorted by place
			deps:  []model.VersionDeployment{{Version: "v1", Replicas: intp(3)}, {Version: "v2", Replicas: intp(1)}},
			want:  []string{"sc-web-v1-0@h1", "sc-web-v1-1@h2", "sc-web-v1-2@h3", "sc-web-v2-0@h1"},
		},
		{
			name:  "offset continues across versions",
			hosts: []string{"h1", "h2", "h3"},
			deps:  []model.VersionDeployment{{Version: "v1", Replicas: intp(1)}, {Version: "v2", Replicas: intp(2)}, {Version: "v3", Replicas: intp(1)}},
			want:  []string{"sc-web-v1-0@h1", "sc-web-v2-0@h2", "sc-web-v2-1@h3", "sc-web-v3-0@h1"},
		},
		{
			name:  "more replicas than hosts without ports wrap",
			hosts: []string{"h1", "h2"},
			deps:  []model.VersionDeployment{{Version: "v1", Replicas: intp(3)}},
			want:  []string{"sc-web-v1-0@h1", "sc-web-v1-1@h2", "sc-web-v1-2@h1"},
		},
		{
			name:  "ports with one replica per host",
			hosts: []string{"h1", "h2", "h3"},
			deps:  []model.VersionDeployment{{Version: "v1", Replicas: intp(3), Ports: port}, {Version: "v2", Replicas: intp(1), Ports: port}},
			want:  []string{"sc-web-v1-0@h1", "sc-web-v1-1@h2", "sc-web-v1-2@h3", "sc-web-v2-0@h1"},
		},
		{
			name:    "ports with too many replicas refused",
			hosts:   []string{"h1", "h2", "h3"},
			deps:    []model.VersionDeployment{{Version: "v1", Replicas: intp(4), Ports: port}},
			wantErr: "version v1 has ports and 4 replicas but only 3 reachable hosts",
		},
		{
			name:  "zero replicas place nothing",
			hosts: []string{"h1"},
			deps:  []model.VersionDeployment{{Version: "v1", Replicas: intp(0)}, {Version: "v2"}},
			want:  nil,
		},
		{
			name:    "no host",
			deps:    []model.VersionDeployment{{Version: "v1", Replicas: intp(1)}},
			wantErr: "no reachable host",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := place("web", tc.deps, tc.hosts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.Name+"@"+r.Host)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
