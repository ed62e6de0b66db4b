package zke

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/zke/runtime"
	"github.com/zdnscloud/singlecloud/zke/transport"
	"github.com/zdnscloud/singlecloud/zke/workflow"
)

// The shared API endpoint of a cluster with a controlPlaneEndpoint: on
// every control-plane node, an haproxy listening on the endpoint port in
// front of every kube-apiserver (TCP, health-checked), and a keepalived
// that holds the virtual IP on one of them (VRRP over unicast between the
// control-plane nodes), moving it within seconds when that node stops.
// This is the keepalived + haproxy setup of Kubernetes' own high
// availability guide, from the images it names (haproxyImage,
// keepalivedImage).
const (
	containerHAProxy    = "kube-haproxy"
	containerKeepalived = "kube-keepalived"
	// dirKubeLB holds the two configuration files on each node.
	dirKubeLB = "/etc/kubernetes/kube-lb"
	// endpointReadyTimeout bounds the wait for the endpoint to answer
	// once every kube-apiserver is ready: keepalived's first election
	// takes a few seconds.
	endpointReadyTimeout = time.Minute
)

// sharedEndpoint reports whether the cluster has a shared API endpoint.
func (r *run) sharedEndpoint() bool { return r.cfg.SharedEndpoint() != "" }

// haproxyConfig is the haproxy configuration of every control-plane node:
// one TCP frontend on the endpoint port, one backend per kube-apiserver,
// checked every second on its /readyz (over TLS, anonymously: RBAC opens
// it to everyone) and out after two failed checks, back after two good
// ones: an API server that is starting, or draining before it stops
// (apiServerShutdownDelay), gets no new connection. Timeouts are long:
// watches hold their connections open. No maxconn: haproxy derives it from
// the container's file limit, which a fixed one could exceed (and then it
// would not start). Docker's official image runs haproxy as its own
// unprivileged user, which the file (and its directory) must be readable
// by.
func haproxyConfig(cps []node) string {
	var b strings.Builder
	b.WriteString(`global
    # maxconn follows the file limit haproxy is given (ulimit -n).
    # A stop (the official image's STOPSIGNAL is SIGUSR1, a soft stop)
    # waits for no watch to end.
    hard-stop-after 5s

defaults
    mode tcp
    timeout connect 5s
    timeout client 24h
    timeout server 24h

frontend kube-apiserver
    bind :` + strconv.Itoa(model.APIEndpointPort) + `
    default_backend kube-apiservers

backend kube-apiservers
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 2 check-ssl verify none
`)
	for _, n := range cps {
		fmt.Fprintf(&b, "    server %s %s check\n", n.Name, hostPort(n.InternalAddress, portAPIServer))
	}
	return b.String()
}

// keepalivedConfig is n's keepalived configuration: every control-plane
// node starts as a backup without preemption (the first to win keeps the
// VIP until it stops), the earlier in the config the higher its priority,
// adverts every second over unicast to the other control-plane nodes.
func keepalivedConfig(cluster, vip, iface string, n node, cps []node) string {
	priority := 150
	var peers []string
	for i, m := range cps {
		if m.Name == n.Name {
			priority = 150 - i
			continue
		}
		peers = append(peers, "        "+m.InternalAddress)
	}
	return fmt.Sprintf(`global_defs {
    router_id %s
    vrrp_garp_master_delay 1
    vrrp_garp_master_refresh 60
}

vrrp_instance zke_api {
    state BACKUP
    nopreempt
    interface %s
    virtual_router_id %d
    priority %d
    advert_int 1
    unicast_src_ip %s
    unicast_peer {
%s
    }
    virtual_ipaddress {
        %s/32 dev %s
    }
}
`, n.Name, iface, virtualRouterID(cluster), priority, n.InternalAddress, strings.Join(peers, "\n"), vip, iface)
}

// virtualRouterID is the cluster's VRRP router id (1–255), from its name,
// so that two clusters on one network are told apart.
func virtualRouterID(cluster string) int {
	h := fnv.New32a()
	h.Write([]byte(cluster))
	return int(h.Sum32()%255) + 1
}

// endpointFiles are n's two configuration files, by path on the node.
func (r *run) endpointFiles(n node) map[string]string {
	cps := withRole(r.nodes, model.RoleControlPlane)
	dir := n.dir(dirKubeLB)
	return map[string]string{
		path.Join(dir, "haproxy.cfg"):     haproxyConfig(cps),
		path.Join(dir, "keepalived.conf"): keepalivedConfig(r.cfg.Name, r.cfg.ControlPlaneEndpoint.VIP, r.factsOf(n).iface, n, r.vrrpPeers()),
	}
}

// vrrpPeers are the nodes keepalived exchanges adverts with: the
// configured control-plane nodes and, during an update that removes some,
// those the last applied configuration had. A removed node keeps running
// (and holding or claiming the VIP) until the update's clean step; a peer
// dropped before that would leave two nodes each believing itself the
// only one, both holding the VIP.
func (r *run) vrrpPeers() []node {
	cps := withRole(r.nodes, model.RoleControlPlane)
	st := r.snapshot()
	if st.Applied == nil {
		return cps
	}
	for _, old := range withRole(nodesOf(*st.Applied), model.RoleControlPlane) {
		if !slices.ContainsFunc(cps, func(n node) bool { return n.Name == old.Name }) {
			cps = append(cps, old)
		}
	}
	return cps
}

// endpointSpecs are the endpoint's containers on control-plane node n
// (none without a shared endpoint). Each carries the hash of its
// configuration file, so that a changed file recreates it.
func (r *run) endpointSpecs(n node) []runtime.ContainerSpec {
	if !r.sharedEndpoint() || !n.HasRole(model.RoleControlPlane) {
		return nil
	}
	dir := n.dir(dirKubeLB)
	files := r.endpointFiles(n)
	sum := func(name string) string {
		h := sha256.Sum256([]byte(files[path.Join(dir, name)]))
		return "ZKE_CONFIG_SHA256=" + hex.EncodeToString(h[:])
	}
	haproxy := serviceSpec(n, containerHAProxy, r.images[model.ImageHAProxy], []string{"haproxy", "-db", "-f", path.Join(dirKubeLB, "haproxy.cfg")})
	haproxy.Binds = []string{dir + ":" + dirKubeLB + ":ro"}
	haproxy.Env = []string{sum("haproxy.cfg")}
	keepalived := serviceSpec(n, containerKeepalived, r.images[model.ImageKeepalived], []string{"keepalived", "--dont-fork", "--log-console", "--vrrp",
		"--use-file=" + path.Join(dirKubeLB, "keepalived.conf")})
	keepalived.Binds = []string{dir + ":" + dirKubeLB + ":ro"}
	keepalived.Env = []string{sum("keepalived.conf")}
	keepalived.CapAdd = []string{"NET_ADMIN", "NET_RAW", "NET_BROADCAST"}
	return []runtime.ContainerSpec{haproxy, keepalived}
}

// ensureEndpoint writes n's endpoint configuration and runs its
// containers. The directory is made readable by all: haproxy's official
// image runs it as an unprivileged user, and a node whose SFTP server
// creates directories under a strict umask would hide the file from it.
func (r *run) ensureEndpoint(ctx context.Context, rep *workflow.Reporter, n node) error {
	specs := r.endpointSpecs(n)
	if len(specs) == 0 {
		return nil
	}
	c, err := r.client(n)
	if err != nil {
		return err
	}
	for p, content := range r.endpointFiles(n) {
		if err := c.Upload(ctx, p, []byte(content), 0o644); err != nil {
			return nodeErr(n, fmt.Errorf("write %s: %w", p, err), "")
		}
	}
	dir := n.dir(dirKubeLB)
	if _, err := c.Exec(ctx, "chmod 0755 "+shellQuote(dir), transport.ExecOptions{}); err != nil {
		return nodeErr(n, fmt.Errorf("make %s readable: %w", dir, err), "")
	}
	for _, s := range specs {
		if err := r.ensure(ctx, rep, n, s); err != nil {
			return err
		}
	}
	return nil
}

// endpointReady waits for the shared endpoint to answer /readyz, asked
// from control-plane node via (the VIP may be on any of them).
func (r *run) endpointReady(ctx context.Context, rep *workflow.Reporter, via node) error {
	if !r.sharedEndpoint() {
		return nil
	}
	server, err := r.apiServerURL()
	if err != nil {
		return err
	}
	what := "the shared API endpoint " + server + " answering"
	err = poll(ctx, waitOn{rep: rep, node: via.Name}, endpointReadyTimeout, what, func(ctx context.Context) (bool, error) {
		return r.apiServerReadyAt(ctx, via, server)
	})
	if err != nil {
		var logs []string
		for _, n := range withRole(r.nodes, model.RoleControlPlane) {
			for _, c := range []string{containerHAProxy, containerKeepalived} {
				if h := r.containerLogsHint(ctx, n, c); h != "" {
					logs = append(logs, n.Name+" "+c+": "+h)
				}
			}
		}
		return nodeErr(via, err, strings.Join(logs, "; "))
	}
	return nil
}

// dropVIPScript removes vip from every interface of the node that holds
// it (keepalived removes it when stopped, not when killed).
func dropVIPScript(vip string) string {
	q := shellQuote(vip + "/32")
	return `for d in $(ip -o -4 addr show to ` + q + ` | awk '{print $2}'); do ip addr del ` + q + ` dev "${d%@*}" || true; done`
}

// interfaceScript prints the interface that holds ip on the node.
func interfaceScript(ip string) string {
	return "ip -o -4 addr show to " + shellQuote(ip+"/32")
}

// parseInterface reads the interface name and the address's network from
// `ip -o -4 addr show` output ("2: eth0    inet 10.0.0.1/24 …"; a veth
// may read eth0@if5). The network is invalid when the line gives none
// (a point-to-point "inet 10.0.0.1 peer 10.0.0.2/32").
func parseInterface(out string) (string, netip.Prefix, error) {
	f := strings.Fields(out)
	if len(f) < 2 {
		return "", netip.Prefix{}, errors.New("no interface holds the address")
	}
	name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
	if name == "" {
		return "", netip.Prefix{}, errors.New("no interface holds the address")
	}
	var network netip.Prefix
	if len(f) >= 4 && f[2] == "inet" {
		if p, err := netip.ParsePrefix(f[3]); err == nil {
			network = p.Masked()
		}
	}
	return name, network, nil
}

// discoverInterface finds the interface of n's internal address, on which
// keepalived puts the virtual IP, and that address's network (whose
// members host-gw routes reach directly).
func (r *run) discoverInterface(ctx context.Context, n node, c *transport.Client) (string, netip.Prefix, error) {
	res, err := c.Exec(ctx, interfaceScript(n.InternalAddress), transport.ExecOptions{})
	if err != nil {
		return "", netip.Prefix{}, nodeErr(n, fmt.Errorf("find the interface of %s: %w", n.InternalAddress, err), "")
	}
	iface, network, err := parseInterface(string(res.Stdout))
	if err != nil {
		return "", netip.Prefix{}, workflow.UserFixable(nodeErr(n, fmt.Errorf("%s: %w", n.InternalAddress, err),
			"set "+r.nodeField(n, "internalAddress")+" to an address of one of "+n.Name+"'s interfaces: the cluster's traffic to the node goes to it"))
	}
	return iface, network, nil
}
