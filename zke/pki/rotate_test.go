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

// A new administrator user reissues the admin certificate alone, under
// that user and outside system:masters; the super-admin keeps the group.
func TestEnsureNewAdminUser(t *testing.T) {
	in := testInput()
	first, _ := mustEnsure(t, nil, in)
	in.AdminUser = "kube-admin-20260301120000"
	next, ch := mustEnsure(t, first, in)
	if got := issuedIDs(ch); len(got) != 1 || got[0] != ID(KindAdmin) || ch.Issued[0].Reason != ReasonChanged {
		t.Fatalf("a new admin user issued %v, want the admin certificate alone (changed)", ch.Issued)
	}
	admin := parse(t, next.Certs[ID(KindAdmin)])
	if admin.Subject.CommonName != in.AdminUser || len(admin.Subject.Organization) != 0 {
		t.Errorf("admin subject %s, want CN %s and no group", admin.Subject, in.AdminUser)
	}
	if super := parse(t, next.Certs[ID(KindSuperAdmin)]); super.Subject.CommonName != SuperAdminCN || len(super.Subject.Organization) != 1 || super.Subject.Organization[0] != AdminGroup {
		t.Errorf("super-admin subject %s", super.Subject)
	}
}

// The service-account key records when it was made, and keeps that date.
func TestServiceAccountKeyCreated(t *testing.T) {
	in := testInput()
	first, _ := mustEnsure(t, nil, in)
	if !first.ServiceAccount.Created.Equal(testNow()) {
		t.Errorf("service-account key created %s, want %s", first.ServiceAccount.Created, testNow())
	}
	in.Now = at(testNow().Add(48 * time.Hour))
	next, _ := mustEnsure(t, first, in)
	if !next.ServiceAccount.Created.Equal(testNow()) {
		t.Errorf("a later run changed the key's creation to %s", next.ServiceAccount.Created)
	}
	// A key stored without its creation gets the cluster CA's.
	next.ServiceAccount.Created = time.Time{}
	if again, _ := mustEnsure(t, next, in); !again.ServiceAccount.Created.Equal(testNow()) {
		t.Errorf("a key of unknown creation dated %s, want the cluster CA's %s", again.ServiceAccount.Created, testNow())
	}
}
