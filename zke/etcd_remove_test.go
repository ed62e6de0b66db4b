package zke

import (
	"reflect"
	"testing"
)

func TestGoneMembers(t *testing.T) {
	n1 := node{}
	n1.Name, n1.InternalAddress = "n1", "10.0.0.1"
	n2 := node{}
	n2.Name, n2.InternalAddress = "n2", "10.0.0.2"
	n3 := node{}
	n3.Name, n3.InternalAddress = "n3", "10.0.0.3"
	st := State{
		EtcdMembers: []string{"n1", "n2", "n3"},
		EtcdInitialCluster: map[string]string{
			"n1": "n1=https://10.0.0.1:2380",
			"n2": "n1=https://10.0.0.1:2380,n2=https://10.0.0.2:2380",
			"n3": "n1=https://10.0.0.1:2380,n2=https://10.0.0.2:2380,n3=https://10.0.0.3:2380",
			// n4 was added by an update that did not finish: in etcd,
			// never in the applied configuration.
			"n4": "n1=https://10.0.0.1:2380,n4=https://10.0.0.4:2380",
		},
	}
	tests := []struct {
		name    string
		keep    []node
		removed []node
		want    []string // name=peer, applied?
	}{
		{"nothing removed but the unfinished one", []node{n1, n2, n3}, nil, []string{"n4=https://10.0.0.4:2380 false"}},
		{"an applied node removed", []node{n1, n2}, []node{n3}, []string{"n3=https://10.0.0.3:2380 true", "n4=https://10.0.0.4:2380 false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, g := range goneMembers(st, tt.keep, tt.removed) {
				got = append(got, g.name+"="+g.peer+" "+map[bool]string{true: "true", false: "false"}[g.node != nil])
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("goneMembers = %q, want %q", got, tt.want)
			}
		})
	}
	if got := peerIn("a=https://x:2380,b=https://y:2380", "b"); got != "https://y:2380" {
		t.Errorf("peerIn = %q", got)
	}
	if got := peerIn("a=https://x:2380", "c"); got != "" {
		t.Errorf("peerIn of a missing name = %q", got)
	}
}
