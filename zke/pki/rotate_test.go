package pki

import (
	"testing"
	"time"
)

// A rotation reissues every leaf issued before its cutoff from the same
// CAs, keeps the CAs and the service-account key, and a second pass with
// the same cutoff (a resumed rotation) changes nothing more.
func TestEnsureRotatesLeavesOnly(t *testing.T) {
	in := testInput()
	first, _ := mustEnsure(t, nil, in)

	later := testNow().Add(48 * time.Hour)
	in.Now = at(later)
	in.ReissueIssuedBefore = later
	rotated, ch := mustEnsure(t, first, in)
	if len(ch.Issued) != len(first.Certs) {
		t.Fatalf("rotation issued %d certificates, want every one of the %d leaves", len(ch.Issued), len(first.Certs))
	}
	for _, is := range ch.Issued {
		if is.Reason != ReasonRotation {
			t.Errorf("%s reissued for %q, want %q", is.ID, is.Reason, ReasonRotation)
		}
	}
	if rotated.ClusterCA != first.ClusterCA || rotated.EtcdCA != first.EtcdCA || rotated.FrontProxyCA != first.FrontProxyCA || rotated.ServiceAccount != first.ServiceAccount {
		t.Error("a leaf rotation changed a CA or the service-account key")
	}
	for id, c := range rotated.Certs {
		if c.Cert == first.Certs[id].Cert {
			t.Errorf("%s was not reissued", id)
		}
		if got := parse(t, c).NotBefore; got.Add(Backdate).Before(later) {
			t.Errorf("%s issued %s, before the rotation", id, got)
		}
	}

	in.Now = at(later.Add(time.Hour))
	again, ch := mustEnsure(t, rotated, in)
	if !ch.Empty() {
		t.Fatalf("a resumed rotation reissued %v again", ch.Issued)
	}
	for id, c := range again.Certs {
		if c.Cert != rotated.Certs[id].Cert {
			t.Errorf("%s changed on the second pass", id)
		}
	}
}
