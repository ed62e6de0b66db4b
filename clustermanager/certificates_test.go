package clustermanager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/zke"
	"github.com/zdnscloud/singlecloud/zke/pki"
)

// selfSigned is a PEM certificate for cn valid until notAfter.
func selfSigned(t *testing.T, cn string, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: notAfter.AddDate(-1, 0, 0), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// eventsSoFar returns the events of kind published before it was called:
// it publishes a marker and reads up to it (the bus keeps order).
func (h *harness) eventsSoFar(kind pubsub.Kind) []pubsub.Event {
	h.t.Helper()
	const marker = "\x00marker"
	h.bus.Publish(pubsub.Event{Kind: "Marker", Cluster: marker})
	timeout := time.NewTimer(waitBound)
	defer timeout.Stop()
	var out []pubsub.Event
	for {
		select {
		case ev := <-h.sub.C():
			if ev.Cluster == marker {
				return out
			}
			if ev.Kind == kind {
				out = append(out, ev)
			}
		case <-timeout.C:
			h.t.Fatalf("the marker event did not arrive within %s", waitBound)
		}
	}
}

// A cluster is warned once as its first certificate passes 120, 30 and 7
// days and expires, with a field on the cluster and an event each time;
// certificates are listed soonest first, and the fleet calendar filters
// by expiry.
func TestCertificateCalendarAndWarnings(t *testing.T) {
	clock := newFakeClock()
	store := storagetest.Open(t)
	h := newHarnessWith(t, store, func(o *Options) { o.Clock = clock.Now })
	start := clock.Now()
	rec := &record{Name: "cal", Kind: KindCreated, Status: fsm.StateRunning, secrets: secrets{ZKE: &zke.State{PKI: &pki.Bundle{
		CASet: pki.CASet{ClusterCA: pki.Cert{Cert: selfSigned(t, "kube-ca", start.AddDate(10, 0, 0))}},
		Certs: map[pki.ID]pki.Cert{
			pki.NodeID(pki.KindAPIServer, "n1"): {Cert: selfSigned(t, "kube-apiserver", start.AddDate(0, 0, 200))},
		},
	}}}}
	e, err := h.m.reserve("cal", fsm.StateRunning, rec)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := h.m.Certificates("cal")
	if err != nil || len(cs) != 2 || cs[0].ID != "kube-apiserver/n1" || cs[0].DaysLeft != 200 || cs[1].ID != "kube-ca" {
		t.Fatalf("calendar %+v (%v), want the apiserver's first with 200 days", cs, err)
	}
	if fleet := h.m.FleetCertificates(100 * 24 * time.Hour); len(fleet) != 0 {
		t.Errorf("fleet within 100 days: %+v, want none", fleet)
	}
	if fleet := h.m.FleetCertificates(365 * 24 * time.Hour); len(fleet) != 1 || fleet[0].Cluster != "cal" {
		t.Errorf("fleet within a year: %+v, want the apiserver's", fleet)
	}

	steps := []struct {
		advanceDays int
		wantWithin  int // -1: no warning on the cluster
		wantEvent   bool
	}{
		{0, -1, false},
		{81, 120, true}, // 119 days left
		{1, 120, false}, // still within 120: announced already
		{90, 30, true},  // 29 days left
		{23, 7, true},   // 6 days left
		{7, 0, true},    // expired
		{1, 0, false},
	}
	for i, st := range steps {
		clock.Advance(time.Duration(st.advanceDays) * 24 * time.Hour)
		h.m.certSweep()
		h.settle("cal") // the announced threshold is recorded on the worker
		w := h.m.view(e).CertificateWarning
		switch {
		case st.wantWithin < 0 && w != nil:
			t.Errorf("step %d: warning %+v, want none", i, w)
		case st.wantWithin >= 0 && (w == nil || w.Within != st.wantWithin || w.Certificate != "kube-apiserver/n1"):
			t.Errorf("step %d: warning %+v, want within %d", i, w, st.wantWithin)
		}
		evs := h.eventsSoFar(pubsub.ClusterCertificateExpiring)
		if got := len(evs) == 1; got != st.wantEvent || len(evs) > 1 {
			t.Errorf("step %d: %d expiring events, want event=%v", i, len(evs), st.wantEvent)
		}
	}

	// A restart remembers what was announced: nothing is announced again.
	h.stop()
	again := newHarnessWith(t, store, func(o *Options) { o.Clock = clock.Now })
	again.m.certSweep()
	if evs := again.eventsSoFar(pubsub.ClusterCertificateExpiring); len(evs) != 0 {
		t.Errorf("after a restart the warning was announced again: %+v", evs)
	}
	if c, err := again.m.Get("cal"); err != nil || c.CertificateWarning == nil || c.CertificateWarning.Within != 0 {
		t.Errorf("after a restart: %+v (%v), want the expired warning", c.CertificateWarning, err)
	}
}

// A Running created cluster whose leaf certificate gets within 30 days of
// its expiry is rotated by singlecloud on its own, unless its config
// turns auto-renewal off.
func TestCertificatesAutoRenew(t *testing.T) {
	clock := newFakeClock()
	api := newAPIServer(t, "good")
	inst := &stepInstaller{kubeconfig: api.kubeconfig()}
	h := newHarnessWith(t, storagetest.Open(t), func(o *Options) { o.Installer = inst; o.Clock = clock.Now })
	off := false
	for _, name := range []string{"auto", "manual"} {
		cfg := createConfig(t, name)
		if name == "manual" {
			cfg.Certificates = &model.CertificatesConfig{AutoRenew: &off}
		}
		if _, err := h.m.Create(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		h.waitStatus(name, fsm.StateRunning, waitBound)
		h.settle(name)
		e, _ := h.m.lookup(name)
		leaf := selfSigned(t, "kube-apiserver", clock.Now().AddDate(0, 0, 40))
		err := h.m.repo.edit(e, func(next *record) bool {
			next.secrets.ZKE.PKI = &pki.Bundle{Certs: map[pki.ID]pki.Cert{pki.NodeID(pki.KindAPIServer, "n1"): {Cert: leaf}}}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	h.m.certSweep()
	h.settle("auto")
	if calls := inst.callList(); calls != "create,create" {
		t.Fatalf("installer calls %q with 40 days left, want no rotation yet", calls)
	}
	clock.Advance(11 * 24 * time.Hour)
	h.m.certSweep()
	h.waitStatus("auto", fsm.StateRunning, waitBound)
	h.settle("auto")
	h.settle("manual")
	if calls := inst.callList(); calls != "create,create,rotate" {
		t.Errorf("installer calls %q with 29 days left, want one rotation (of auto only)", calls)
	}
	ops, _ := h.m.Operations("auto")
	if len(ops) == 0 || ops[0].Type != OpRotateCertificates || ops[0].StartedBy != autoRenewActor {
		t.Errorf("auto's newest operation %+v, want the automatic rotation", ops)
	}
}
