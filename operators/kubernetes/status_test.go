package kubernetes

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// now is the clock of the status tests; minReady their readiness delay.
var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const testMinReady = 3 * time.Second

// testDep is the Deployment of version of app "web" in namespace default at
// revision rev, as the Deployment controller leaves it.
func testDep(version string, replicas int32, rev string) appsv1.Deployment {
	lbl := versionLabels("web", version)
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: DeploymentName("web", version), UID: types.UID("dep-" + version),
			Labels: lbl, Annotations: map[string]string{annotationRevision: rev}, Generation: 1,
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1},
	}
}

// testRS is a ReplicaSet of d with template hash and revision rev.
func testRS(d appsv1.Deployment, hash, rev string) appsv1.ReplicaSet {
	lbl := map[string]string{labelTemplateHash: hash}
	for k, v := range d.Spec.Selector.MatchLabels {
		lbl[k] = v
	}
	yes := true
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Namespace: d.Namespace, Name: d.Name + "-" + hash, UID: types.UID("rs-" + hash), Labels: lbl,
		Annotations:     map[string]string{annotationRevision: rev},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}},
	}}
}

type podOpt func(*corev1.Pod)

// testPod is a running pod of rs on node; without options it has no Ready
// condition.
func testPod(name string, rs appsv1.ReplicaSet, node string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: name, Labels: rs.Labels},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

// readyFor makes the pod's container ready and its Ready condition true
// since d before now.
func readyFor(d time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-d)),
		})
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, Ready: true}}
	}
}

// notReady gives the pod a false Ready condition and the container status c.
func notReady(c corev1.ContainerStatus) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [app]",
		})
		c.Name = containerName
		p.Status.ContainerStatuses = []corev1.ContainerStatus{c}
	}
}

func crashLooping() corev1.ContainerStatus {
	return corev1.ContainerStatus{
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
	}
}

func terminating(p *corev1.Pod) {
	t := metav1.NewTime(now)
	p.DeletionTimestamp = &t
}

func node(name string, desired, ready int, reason string) model.NodeStatus {
	return model.NodeStatus{Node: name, Desired: desired, Ready: ready, Healthy: model.HealthInfo{Level: model.Level(ready, desired)}, Reason: reason}
}

func version(v string, percent float64, desired, ready int, nodes ...model.NodeStatus) model.VersionStatus {
	if nodes == nil {
		nodes = []model.NodeStatus{}
	}
	return model.VersionStatus{Version: v, Percent: percent, Desired: desired, Ready: ready, Healthy: model.HealthInfo{Level: model.Level(ready, desired)}, Nodes: nodes}
}

func TestComputeStatus(t *testing.T) {
	v1 := testDep("v1", 3, "1")
	rs1 := testRS(v1, "aaa", "1")
	v2 := testDep("v2", 1, "1")
	rs2 := testRS(v2, "bbb", "1")

	// A rollout of v1 in progress: revision 2 is current, revision 1's
	// pods still run and are ready.
	rolling := testDep("v1", 3, "2")
	rsOld, rsNew := testRS(rolling, "old", "1"), testRS(rolling, "new", "2")

	unobserved := testDep("v1", 3, "1")
	unobserved.Generation = 2

	zero := testDep("v1", 0, "1")
	rsZero := testRS(zero, "aaa", "1")

	stranger := rs1
	stranger.OwnerReferences = nil
	otherNS := testPod("p-other-ns", rs1, "n1", readyFor(time.Minute))
	otherNS.Namespace = "elsewhere"
	failed := testPod("p-failed", rs1, "n1")
	failed.Status.Phase = corev1.PodFailed
	failed.Status.Reason = "Evicted"

	tests := []struct {
		name  string
		deps  []appsv1.Deployment
		rss   []appsv1.ReplicaSet
		pods  []corev1.Pod
		level int
		want  []model.VersionStatus
	}{{
		name:  "no deployment is level 0",
		level: 0,
		want:  []model.VersionStatus{},
	}, {
		name: "all ready",
		deps: []appsv1.Deployment{v1}, rss: []appsv1.ReplicaSet{rs1},
		pods: []corev1.Pod{
			testPod("p1", rs1, "n1", readyFor(time.Minute)), testPod("p2", rs1, "n2", readyFor(time.Minute)), testPod("p3", rs1, "n1", readyFor(time.Hour)),
		},
		level: 100,
		want:  []model.VersionStatus{version("v1", 100, 3, 3, node("n1", 2, 2, ""), node("n2", 1, 1, ""))},
	}, {
		name: "one crashing container gives its reason",
		deps: []appsv1.Deployment{v1}, rss: []appsv1.ReplicaSet{rs1},
		pods: []corev1.Pod{
			testPod("p1", rs1, "n1", readyFor(time.Minute)), testPod("p2", rs1, "n2", readyFor(time.Minute)), testPod("p3", rs1, "n2", notReady(crashLooping())),
		},
		level: 66,
		want: []model.VersionStatus{version("v1", 100, 3, 2,
			node("n1", 1, 1, ""), node("n2", 2, 1, "CrashLoopBackOff: back-off 10s restarting failed container"))},
	}, {
		name: "exited container without a waiting reason",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{rs2},
		pods: []corev1.Pod{testPod("p1", rs2, "n1", notReady(corev1.ContainerStatus{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		}))},
		level: 0,
		want:  []model.VersionStatus{version("v2", 100, 1, 0, node("n1", 1, 0, "exited with code 1"))},
	}, {
		name: "running container after an OOM kill",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{rs2},
		pods: []corev1.Pod{testPod("p1", rs2, "n1", notReady(corev1.ContainerStatus{
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
		}))},
		level: 0,
		want:  []model.VersionStatus{version("v2", 100, 1, 0, node("n1", 1, 0, "exited with code 137 (OOMKilled)"))},
	}, {
		name: "pods ready for less than MinReady do not count, exactly MinReady does",
		deps: []appsv1.Deployment{v1}, rss: []appsv1.ReplicaSet{rs1},
		pods: []corev1.Pod{
			testPod("p1", rs1, "n1", readyFor(testMinReady)), testPod("p2", rs1, "n1", readyFor(time.Second)), testPod("p3", rs1, "n1", readyFor(0)),
		},
		level: 33,
		want:  []model.VersionStatus{version("v1", 100, 3, 1, node("n1", 3, 1, "ready for 1s, counts after 3s"))},
	}, {
		name: "missing and unscheduled pods",
		deps: []appsv1.Deployment{v1}, rss: []appsv1.ReplicaSet{rs1},
		pods: []corev1.Pod{
			testPod("p1", rs1, "n1", readyFor(time.Minute)),
			testPod("p2", rs1, "", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/2 nodes are available"}}
			}),
		},
		level: 33,
		want: []model.VersionStatus{version("v1", 100, 3, 1,
			node("(missing)", 1, 0, "not created yet"), node("(unscheduled)", 1, 0, "Unschedulable: 0/2 nodes are available"), node("n1", 1, 1, ""))},
	}, {
		name: "a pending pod with no status says its phase",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{rs2},
		pods:  []corev1.Pod{testPod("p1", rs2, "", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })},
		level: 0,
		want:  []model.VersionStatus{version("v2", 100, 1, 0, node("(unscheduled)", 1, 0, "pod Pending"))},
	}, {
		name: "rollout in progress: the old template's ready pods do not count",
		deps: []appsv1.Deployment{rolling}, rss: []appsv1.ReplicaSet{rsOld, rsNew},
		pods: []corev1.Pod{
			testPod("old1", rsOld, "n1", readyFor(time.Hour)), testPod("old2", rsOld, "n1", readyFor(time.Hour)), testPod("old3", rsOld, "n2", readyFor(time.Hour)),
			testPod("new1", rsNew, "n2", notReady(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})),
		},
		level: 0,
		want: []model.VersionStatus{version("v1", 100, 3, 0,
			node("(missing)", 2, 0, "not created yet"), node("n2", 1, 0, "ContainerCreating"))},
	}, {
		name: "a spec the controller has not observed has no current pods",
		deps: []appsv1.Deployment{unobserved}, rss: []appsv1.ReplicaSet{rs1},
		pods:  []corev1.Pod{testPod("p1", rs1, "n1", readyFor(time.Hour))},
		level: 0,
		want:  []model.VersionStatus{version("v1", 100, 3, 0, node("(missing)", 3, 0, "not created yet"))},
	}, {
		name:  "no replicaset yet",
		deps:  []appsv1.Deployment{v2},
		level: 0,
		want:  []model.VersionStatus{version("v2", 100, 1, 0, node("(missing)", 1, 0, "not created yet"))},
	}, {
		name: "a replicaset the deployment does not control is not current",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{stranger},
		pods:  []corev1.Pod{testPod("p1", stranger, "n1", readyFor(time.Hour))},
		level: 0,
		want:  []model.VersionStatus{version("v2", 100, 1, 0, node("(missing)", 1, 0, "not created yet"))},
	}, {
		name: "terminating, finished and foreign pods are left out",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{rs2},
		pods: []corev1.Pod{
			testPod("p1", rs2, "n1", readyFor(time.Hour), terminating), otherNS, failed,
			testPod("p2", rs2, "n2", readyFor(time.Hour)),
		},
		level: 100,
		want:  []model.VersionStatus{version("v2", 100, 1, 1, node("n2", 1, 1, ""))},
	}, {
		name: "ready is capped at desired while scaling down",
		deps: []appsv1.Deployment{v2}, rss: []appsv1.ReplicaSet{rs2},
		pods:  []corev1.Pod{testPod("p1", rs2, "n1", readyFor(time.Hour)), testPod("p2", rs2, "n2", readyFor(time.Hour))},
		level: 100,
		want:  []model.VersionStatus{version("v2", 100, 1, 1, node("n1", 1, 1, ""), node("n2", 1, 1, ""))},
	}, {
		name: "two versions 3+1 share 75/25, sorted by version",
		deps: []appsv1.Deployment{v2, v1}, rss: []appsv1.ReplicaSet{rs2, rs1},
		pods: []corev1.Pod{
			testPod("a1", rs1, "n1", readyFor(time.Hour)), testPod("a2", rs1, "n1", readyFor(time.Hour)), testPod("a3", rs1, "n2", readyFor(time.Hour)),
			testPod("b1", rs2, "n2", notReady(crashLooping())),
		},
		level: 75,
		want: []model.VersionStatus{
			version("v1", 75, 3, 3, node("n1", 2, 2, ""), node("n2", 1, 1, "")),
			version("v2", 25, 1, 0, node("n2", 1, 0, "CrashLoopBackOff: back-off 10s restarting failed container")),
		},
	}, {
		name: "zero desired",
		deps: []appsv1.Deployment{zero}, rss: []appsv1.ReplicaSet{rsZero},
		level: 100,
		want:  []model.VersionStatus{version("v1", 0, 0, 0)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := computeStatus("web", tc.deps, tc.rss, tc.pods, now, testMinReady)
			want := &model.ApplicationStatus{App: "web", Healthy: model.HealthInfo{Level: tc.level}, Versions: tc.want}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("computeStatus:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestPodReady(t *testing.T) {
	tests := []struct {
		name     string
		pod      corev1.Pod
		minReady time.Duration
		want     bool
	}{
		{"no condition", corev1.Pod{}, testMinReady, false},
		{"ready long enough", testPod("p", testRS(testDep("v1", 1, "1"), "h", "1"), "n", readyFor(4*time.Second)), testMinReady, true},
		{"ready too recently", testPod("p", testRS(testDep("v1", 1, "1"), "h", "1"), "n", readyFor(2*time.Second)), testMinReady, false},
		{"ready with no transition time", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}, testMinReady, false},
		{"ready with no transition time and no delay", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := podReady(&tc.pod, now, tc.minReady); got != tc.want {
				t.Fatalf("podReady = %v, want %v", got, tc.want)
			}
		})
	}
}
