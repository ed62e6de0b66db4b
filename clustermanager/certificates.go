package clustermanager

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/certificates"
	"github.com/zdnscloud/singlecloud/fsm"
	kubecfg "github.com/zdnscloud/singlecloud/internal/kubeconfig"
	"github.com/zdnscloud/singlecloud/pubsub"
)

// certSweepInterval is how often every cluster's certificate calendar is
// checked for a warning that became due: expiries are days apart, an hour
// is plenty.
const certSweepInterval = time.Hour

// ClusterCertificate is one certificate of the fleet calendar.
type ClusterCertificate struct {
	Cluster string `json:"cluster"`
	certificates.Certificate
}

// certCache is an entry's parsed certificates, valid for the record
// revision it was parsed from, and the warning last announced.
type certCache struct {
	rev       uint64
	parsed    bool
	certs     []certificates.Certificate
	warning   *certificates.Warning
	announced int // the threshold last announced; -1 none
}

// certificatesOf returns e's certificates (the PKI zke issued and the
// certificates of the kubeconfig singlecloud hands out), parsing them only
// when the record changed since the last time, with days left as of now.
func (m *Manager) certificatesOf(e *entry) []certificates.Certificate {
	now := m.opts.Clock()
	e.mu.Lock()
	rec, rev, cache := e.rec, e.rev, e.certs
	e.mu.Unlock()
	if !cache.parsed || cache.rev != rev {
		cs := parseCertificates(rec, now)
		e.mu.Lock()
		e.certs.rev, e.certs.parsed, e.certs.certs = rev, true, cs
		e.mu.Unlock()
		cache.certs = cs
	}
	return refreshed(cache.certs, now)
}

// parseCertificates returns rec's certificates (the PKI zke issued and
// the certificates of the kubeconfig singlecloud hands out), sorted, with
// days left as of now.
func parseCertificates(rec *record, now time.Time) []certificates.Certificate {
	var cs []certificates.Certificate
	if st := rec.secrets.ZKE; st != nil {
		cs = certificates.FromBundle(st.PKI, now)
	}
	if len(rec.secrets.Kubeconfig) > 0 {
		if cfg, err := kubecfg.Parse(rec.secrets.Kubeconfig); err == nil {
			cs = append(cs, certificates.FromKubeconfig("admin", cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.CAData, now)...)
		}
	}
	certificates.Sort(cs)
	return cs
}

// refreshed returns a copy of cs with days left as of now.
func refreshed(cs []certificates.Certificate, now time.Time) []certificates.Certificate {
	out := make([]certificates.Certificate, len(cs))
	for i, c := range cs {
		certificates.Refresh(&c, now)
		out[i] = c
	}
	return out
}

// Certificates returns the certificate calendar of one cluster, soonest
// expiry first.
func (m *Manager) Certificates(name string) ([]certificates.Certificate, error) {
	e, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	if !e.machine.Current().Listed() {
		return nil, notFound(name)
	}
	return m.certificatesOf(e), nil
}

// FleetCertificates returns the certificates of every cluster that expire
// within d from now (every one when d <= 0), soonest first.
func (m *Manager) FleetCertificates(d time.Duration) []ClusterCertificate {
	limit := m.opts.Clock().Add(d)
	var out []ClusterCertificate
	for _, c := range m.List(false) {
		e, err := m.lookup(c.Name)
		if err != nil {
			continue
		}
		out = appendDue(out, c.Name, m.certificatesOf(e), d, limit)
	}
	sortFleet(out)
	return out
}

// appendDue appends to out the certificates of cluster that expire before
// limit (every one when d <= 0), and those that could not be read.
func appendDue(out []ClusterCertificate, cluster string, cs []certificates.Certificate, d time.Duration, limit time.Time) []ClusterCertificate {
	for _, cert := range cs {
		if d <= 0 || cert.Error != "" || (cert.Expires() && cert.NotAfter.Before(limit)) {
			out = append(out, ClusterCertificate{Cluster: cluster, Certificate: cert})
		}
	}
	return out
}

// sortFleet orders the fleet calendar: soonest expiry first, then by
// cluster and certificate.
func sortFleet(out []ClusterCertificate) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Expires() != b.Expires() {
			return a.Expires()
		}
		if !a.NotAfter.Equal(b.NotAfter) {
			return a.NotAfter.Before(b.NotAfter)
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.ID < b.ID
	})
}

// certSweepStartDelay is how long after Run the first sweep waits. The
// first sweep parses every cluster's kubeconfig (3 s of CPU at 100,000
// clusters, the rest are cached by revision): started at once it competes
// with start-up's load, reconnections and first lists on a small host
// (issue 11: the first whole list at 100,000 clusters). Expiry counts in
// days; a warning a minute late after a restart costs nothing, and any
// operation that ends checks its own cluster at once as before.
const certSweepStartDelay = time.Minute

// certLoop checks every cluster's calendar certSweepStartDelay after it
// starts and then each certSweepInterval until done is closed.
func (m *Manager) certLoop(done <-chan struct{}) {
	first := time.NewTimer(certSweepStartDelay)
	defer first.Stop()
	select {
	case <-done:
		return
	case <-first.C:
	}
	m.certSweep()
	t := time.NewTicker(certSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			m.certSweep()
		}
	}
}

// autoRenewWithin is how close to its expiry a leaf certificate makes
// singlecloud rotate a cluster's certificates on its own (unless the
// cluster's certificates.autoRenew is false): zke renews leaves this
// close to expiry on every run anyway (pki.RenewBefore), so a cluster
// left alone is renewed at the same point.
const autoRenewWithin = 30

// autoRenewActor is who an automatic rotation is started by.
const autoRenewActor = "singlecloud (certificate auto-renewal)"

// certSweep refreshes every cluster's warning and announces those that
// passed a threshold since the last announcement; a Running created
// cluster with a leaf near its expiry is rotated.
func (m *Manager) certSweep() {
	m.mu.RLock()
	es := make([]*entry, 0, len(m.all))
	for _, e := range m.all {
		es = append(es, e)
	}
	m.mu.RUnlock()
	for _, e := range es {
		if e.machine.Current().Listed() {
			m.checkCertificates(e, true)
		}
	}
}

// checkCertificates sets e's warning and publishes a
// ClusterCertificateExpiring event when it passed a new threshold (120,
// 30, 7 days, expired); with renew, it also starts an automatic renewal
// when one is due. It must not renew on e's worker (the rotation's start
// is an item of that worker).
func (m *Manager) checkCertificates(e *entry, renew bool) {
	e.mu.Lock()
	rev := e.rev
	e.mu.Unlock()
	w := certificates.WarningFor(m.certificatesOf(e), m.opts.Clock())
	e.mu.Lock()
	if e.rev != rev {
		// The record changed meanwhile (an operation ended and checked
		// it): this warning may be older than the one stored.
		e.mu.Unlock()
		return
	}
	if !sameWarning(e.certs.warning, w) {
		// The view changes: cached renderings keyed by revision must go.
		e.bumpLocked()
	}
	e.certs.warning = w
	announce := w != nil && (e.certs.announced < 0 || w.Within < e.certs.announced)
	before := e.certs.announced
	if w == nil {
		e.certs.announced = -1
	} else if announce {
		e.certs.announced = w.Within
	}
	after := e.certs.announced
	e.mu.Unlock()
	if after != before {
		m.saveCertWarned(e, after)
	}
	if renew && w != nil && w.DaysLeft <= autoRenewWithin {
		m.autoRenew(e)
	}
	if announce {
		m.log.Warn("cluster certificate expiring", "cluster", e.name, "certificate", w.Certificate, "notAfter", w.NotAfter, "daysLeft", w.DaysLeft)
		e.publish(m.opts.Bus, pubsub.Event{
			Kind: pubsub.ClusterCertificateExpiring, Cluster: e.name, Status: string(e.machine.Current()),
			Reason: w.Message, Time: m.opts.Clock().UTC(),
		})
	}
}

// saveCertWarned records the threshold last announced in e's row, on e's
// worker (queued, not waited for: this may run on that worker).
func (m *Manager) saveCertWarned(e *entry, within int) {
	_, err := m.queue.add(e.name, "record certificate warning", false, func(context.Context) {
		err := m.repo.edit(e, func(next *record) bool {
			if within < 0 {
				next.CertWarnedWithin = nil
			} else {
				w := within
				next.CertWarnedWithin = &w
			}
			return true
		})
		if err != nil {
			m.log.Warn("certificate warning not recorded; it may be announced again after a restart", "cluster", e.name, "err", err)
		}
	})
	if err != nil {
		m.log.Warn("certificate warning not recorded; it may be announced again after a restart", "cluster", e.name, "err", err)
	}
}

// sameWarning reports whether a and b show the same thing, every field
// of it (a view shows them all).
func sameWarning(a, b *certificates.Warning) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Certificate == b.Certificate && a.Within == b.Within && a.DaysLeft == b.DaysLeft &&
		a.NotAfter.Equal(b.NotAfter) && a.Message == b.Message
}

// certWarning returns e's last computed warning.
func (e *entry) certWarning() *certificates.Warning {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.certs.warning == nil {
		return nil
	}
	w := *e.certs.warning
	return &w
}

// autoRenew starts a rotation of e's leaf certificates when one of them
// (not a CA: a CA rotation restarts every component three times, which
// the admin decides on) has autoRenewWithin days or
// fewer left, the cluster is a Running created cluster whose config does
// not turn auto-renewal off, and the state machine allows it. A rotation
// that fails leaves the cluster Unavailable, which is not retried here:
// the warning stays and the admin decides.
func (m *Manager) autoRenew(e *entry) {
	rec := e.record()
	if rec.Kind != KindCreated || !rec.Config.AutoRenewCertificates() || !e.machine.Current().Ready() || !e.machine.Can(fsm.EventRotateCertificates) {
		return
	}
	due := false
	for _, c := range m.certificatesOf(e) {
		switch {
		case c.Error != "" || !c.Expires() || strings.HasPrefix(c.ID, "kubeconfig/"):
		case c.CA && c.DaysLeft <= autoRenewWithin:
			// New leaves would end with the CA: renewing would only
			// repeat, every sweep. The CA needs rotating.
			m.log.Warn("certificate authority expiring: leaves are not renewed automatically; rotate the CAs (?action=rotateCertificates with {\"ca\": true})", "cluster", e.name, "ca", c.ID, "daysLeft", c.DaysLeft)
			return
		case !c.CA && c.DaysLeft <= autoRenewWithin:
			due = true
		}
	}
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(WithActor(m.root, autoRenewActor), m.opts.RequestTimeout)
	defer cancel()
	if _, err := m.RotateCertificates(ctx, e.name, RotateOptions{}); err != nil {
		m.log.Warn("automatic certificate renewal not started", "cluster", e.name, "err", err)
		return
	}
	m.log.Info("automatic certificate renewal started", "cluster", e.name)
}
