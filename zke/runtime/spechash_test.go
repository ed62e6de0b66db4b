package runtime

import (
	"errors"
	"testing"
)

func TestSpecHashIsEnsures(t *testing.T) {
	s := ContainerSpec{Name: "etcd", Image: "zdnscloud/kubernetes:v1.36.3", CapAdd: []string{"NET_ADMIN", "cap_sys_admin"}}
	got, err := SpecHash(s, "c1")
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.normalized("c1", RestartUnlessStopped)
	if err != nil {
		t.Fatal(err)
	}
	if want := specHash(n); got != want {
		t.Fatalf("SpecHash = %s, Ensure labels %s", got, want)
	}
	// Normalization: the same capabilities in another spelling and order.
	s2 := s
	s2.CapAdd = []string{"SYS_ADMIN", "CAP_NET_ADMIN"}
	if again, _ := SpecHash(s2, "c1"); again != got {
		t.Errorf("equal specs hash differently: %s, %s", again, got)
	}
	if other, _ := SpecHash(s, "c2"); other == got {
		t.Error("the cluster is not part of the hash")
	}
	if _, err := SpecHash(ContainerSpec{Name: "-bad", Image: "x"}, "c1"); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("invalid spec: %v", err)
	}
}
