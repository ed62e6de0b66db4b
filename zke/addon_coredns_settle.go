package zke

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/zdnscloud/singlecloud/internal/kubeclient"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// CoreDNS's readiness and how long zke watches it serve before it says
// so. A CoreDNS that forwards to itself (plugin/loop) or cannot read its
// Corefile is Ready for a moment and exits seconds later, so a rolled-out
// Deployment alone proves nothing.
const (
	// corednsReadinessPeriod is the period of CoreDNS's readiness probe
	// (its ready plugin on corednsReadyPort).
	corednsReadinessPeriod = 10 * time.Second
	corednsReadyPort       = 8181
	// corednsSettle is how long every CoreDNS pod must stay Ready
	// without a restart: two probe periods, so that a pod that stopped
	// answering has been seen failing once.
	corednsSettle = 2 * corednsReadinessPeriod
	// corednsMaxRestarts restarts of one pod while zke watches end the
	// wait at once: the pod crash-loops.
	corednsMaxRestarts = 2
	// corednsLogTail is how many of a failing pod's last log lines are
	// searched for the line that says why.
	corednsLogTail = 20
)

// errCoreDNSCrashing: a CoreDNS pod restarted while zke watched it.
var errCoreDNSCrashing = errors.New("CoreDNS is crash-looping")

// corednsReadinessProbe asks CoreDNS's ready plugin, which answers once
// every plugin (the kubernetes plugin's first sync among them) is ready.
func corednsReadinessProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(corednsReadyPort), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds: int32(corednsReadinessPeriod / time.Second), TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
	}
}

// settleCoreDNS waits, up to timeout, until every CoreDNS pod has been
// Ready without a restart for settle (watched by zke, or by the pod's own
// Ready condition when that is older than settle plus the clock skew
// preflight allows), and then asks CoreDNS a real question through its
// Service (queryClusterDNS). A pod that restarts corednsMaxRestarts
// times ends the wait at once, with the log line that says why
// (errCoreDNSCrashing).
func (r *run) settleCoreDNS(ctx context.Context, rep waitReporter, kube kubeclient.Interface, timeout, settle time.Duration) error {
	first, last := map[string]int32{}, map[string]int32{}
	start := time.Now()
	var stableSince time.Time
	err := poll(ctx, waitOn{rep: rep}, timeout, fmt.Sprintf("CoreDNS pods Ready without a restart for %s", settle), func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		if err != nil {
			return false, fmt.Errorf("list CoreDNS pods: %w", err)
		}
		now := time.Now()
		why, live, settledBefore := "", 0, 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			live++
			restarts := podRestarts(p)
			base, seen := first[p.Name]
			// A restart makes the pod unsettled again; corednsMaxRestarts
			// of them end the wait.
			switch {
			case !seen:
				first[p.Name], last[p.Name] = restarts, restarts
			case restarts-base >= corednsMaxRestarts:
				return false, stopPolling(fmt.Errorf("%w: pod %s restarted %d times in %s; %s", errCoreDNSCrashing, p.Name, restarts-base,
					now.Sub(start).Round(time.Second), corednsLogLine(ctx, kube, p)))
			case restarts != last[p.Name]:
				last[p.Name], why = restarts, fmt.Sprintf("pod %s restarted", p.Name)
			}
			if why == "" && !podReady(p) {
				why = describePod(p)
			}
			if since, ok := readySince(p); ok && now.Sub(since) >= settle+maxClockSkewSecs*time.Second {
				settledBefore++
			}
		}
		if live == 0 {
			why = "no CoreDNS pod exists"
		}
		if why != "" || stableSince.IsZero() {
			stableSince = now
		}
		switch {
		case why != "":
			return false, errors.New(why)
		case settledBefore == live:
			return true, nil
		}
		return now.Sub(stableSince) >= settle, fmt.Errorf("Ready for %s", now.Sub(stableSince).Round(time.Second))
	})
	if err != nil {
		return err
	}
	return r.queryClusterDNS(ctx, rep)
}

// podRestarts is the sum of p's containers' restart counts.
func podRestarts(p corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// podReady reports whether p's Ready condition is True.
func podReady(p corev1.Pod) bool {
	_, ok := readySince(p)
	return ok
}

// readySince is when p's Ready condition last became True, and whether
// it is True.
func readySince(p corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time, c.Status == corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// corednsLogLine is the line of p's last log lines (its previous
// container's, when it restarted) that says why it stopped: the last
// FATAL or ERROR line, or else the last line; a note when the log cannot
// be read.
func corednsLogLine(ctx context.Context, kube kubeclient.Interface, p corev1.Pod) string {
	tail := int64(corednsLogTail)
	rc, err := kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: podRestarts(p) > 0, TailLines: &tail}).Stream(ctx)
	if err != nil {
		return "its log cannot be read (" + err.Error() + "): see kubectl -n kube-system logs --previous " + p.Name
	}
	defer rc.Close()
	return "its log says " + strings.TrimSpace(pickLogLine(io.LimitReader(rc, 64<<10)))
}

// pickLogLine is the last line of log holding FATAL or ERROR, or else its
// last non-empty line.
func pickLogLine(log io.Reader) string {
	var last, bad string
	sc := bufio.NewScanner(log)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		last = line
		if strings.Contains(line, "FATAL") || strings.Contains(line, "ERROR") {
			bad = line
		}
	}
	if bad != "" {
		return bad
	}
	return last
}

// warnReporter is a waitReporter that also takes warnings for the
// operation's log (workflow.Reporter).
type warnReporter interface {
	Warnf(node, format string, args ...any)
}

// dnsQueryTimeout bounds how long zke asks CoreDNS through its Service
// before it gives up: kube-proxy programs a new Service's rules on each
// worker within seconds.
const dnsQueryTimeout = 30 * time.Second

// queryClusterDNS resolves the kubernetes Service's name through the
// cluster DNS Service, over TCP from the first connected worker (where
// kube-proxy routes the Service IP), asking again until CoreDNS answers
// with an address or dnsQueryTimeout passes. A cluster without workers
// has nowhere to ask from. A question that gets no answer is a warning in
// the operation's log, not a failure: on the testbed a worker that runs
// the only CoreDNS pod was seen refusing the connection from the node
// itself (host to its own pod through the Service); until the cause is
// known it must not fail an install. The settle before it (Ready, no
// restart) is what catches a crash-looping CoreDNS.
func (r *run) queryClusterDNS(ctx context.Context, rep waitReporter) error {
	var w *node
	for _, n := range withRole(r.nodes, model.RoleWorker) {
		if _, err := r.client(n); err == nil {
			w = &n
			break
		}
	}
	if w == nil {
		return nil
	}
	c, err := r.client(*w)
	if err != nil {
		return err
	}
	server := net.JoinHostPort(r.cfg.ClusterDNSServiceIP, "53")
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return c.DialContext(ctx, "tcp", server)
	}}
	name := "kubernetes.default.svc." + r.cfg.ClusterDomain + "."
	what := fmt.Sprintf("CoreDNS at %s to resolve %s (asked from %s over TCP)", server, name, w.Name)
	err = poll(ctx, waitOn{rep: rep, node: w.Name}, dnsQueryTimeout, what, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 2*probeTimeout)
		defer cancel()
		addrs, err := res.LookupHost(ctx, name)
		if err == nil && len(addrs) == 0 {
			err = errors.New("no address")
		}
		return err == nil, err
	})
	if err != nil {
		msg := fmt.Sprintf("%v: check CoreDNS's log (kubectl -n kube-system logs -l k8s-app=kube-dns) and kube-proxy on %s", err, w.Name)
		if wr, ok := rep.(warnReporter); ok {
			wr.Warnf(w.Name, "%s", msg)
		}
		r.in.log.Warn("CoreDNS did not answer through its Service", "cluster", r.cfg.Name, "node", w.Name, "err", err)
	}
	return nil
}
