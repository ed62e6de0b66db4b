// Package testbed gives tests real infrastructure to drive: a Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager) running as
// child processes, and Linux "hosts" — each its own network, mount and UTS
// namespace with a real OpenSSH sshd and, on request, containerd (CRI) and
// dockerd with the test images loaded.
//
// Everything a test starts is stopped in t.Cleanup, also when the test fails:
// tracked processes by PID first, then whatever they left behind, found
// through the per-host cgroups (pods, containers, shims, SSH sessions), then
// namespaces, links, cgroups and the kernel sysctls a kubelet changes. Leftovers
// of a test binary that died without cleaning up are swept the next time the
// same subnet slot is taken.
//
// Prerequisites (root, OpenSSH, containerd, Docker, `make testbin`) are
// checked by Require: outside CI a missing one skips the test with one line
// saying how to get it; with CI=true it fails the test.
//
// Layout of a host (see hosts.go): host i of a StartHosts call that got slot
// s has address 10.250.s.(10+i) on bridge sctb<s> (gateway 10.250.s.1) and
// its directory at /tmp/sctb<s>/h<i>; with HostOptions.SecondSubnet, the
// hosts it lists are at 10.251.s.(10+i) on bridge sctb<s>b (gateway
// 10.251.s.1) instead, routed to the first subnet by a router namespace
// at 10.250.s.254 and 10.251.s.254 (router.go). Inside it, /run, /root and /tmp are
// the host's own; /etc and /var are copy-on-write overlays of the machine's
// whose writes stay in the host's directory; /etc/kubernetes, /etc/cni,
// /var/lib/{kubelet,etcd,cni} and /var/log/{pods,containers} are bind mounts
// of directories under the host's directory; the host's directory itself is
// visible at the same path inside and outside the host, and so is the
// testbin directory. Other paths under /tmp, /root and /run of the test
// (t.TempDir() included) are not visible inside hosts.
package testbed
