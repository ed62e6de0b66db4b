package etcdtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// StartCluster starts an etcd cluster of n members on loopback, with
// their data in tb's temporary directory, and stops them when tb ends.
// Each member's Endpoint is its client URL; Stop kills one member.
func StartCluster(tb testing.TB, n int) []*Server {
	tb.Helper()
	bin := require(tb)
	dir := tb.TempDir()
	type ports struct{ client, peer int }
	var ps []ports
	var initial []string
	for i := range n {
		p := ports{freePort(), freePort()}
		if p.client == 0 || p.peer == 0 {
			tb.Fatal("etcdtest: no free loopback port")
		}
		ps = append(ps, p)
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, p.peer))
	}
	var members []*Server
	stopAll := func() {
		for _, m := range members {
			m.Stop()
		}
	}
	for i, p := range ps {
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", p.client)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", p.peer)
		data := filepath.Join(dir, fmt.Sprintf("m%d", i))
		logFile, err := os.Create(data + ".log")
		if err != nil {
			stopAll()
			tb.Fatalf("etcdtest: %v", err)
		}
		cmd := exec.Command(bin, "--name="+fmt.Sprintf("m%d", i), "--data-dir="+data,
			"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
			"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
			"--initial-cluster="+strings.Join(initial, ","), "--initial-cluster-state=new",
			"--initial-cluster-token=etcdtest-cluster", "--unsafe-no-fsync", "--log-level=warn")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		err = cmd.Start()
		logFile.Close()
		if err != nil {
			stopAll()
			tb.Fatalf("etcdtest: start %s: %v", bin, err)
		}
		s := &Server{Endpoint: clientURL, cmd: cmd, dir: dir, exited: make(chan struct{})}
		go func() { cmd.Wait(); close(s.exited) }()
		members = append(members, s)
	}
	tb.Cleanup(stopAll)
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range members {
		for !healthy(nil, m.Endpoint) {
			select {
			case <-m.exited:
				tb.Fatalf("etcdtest: member %s exited at start (logs in %s)", m.Endpoint, dir)
			default:
			}
			if time.Now().After(deadline) {
				tb.Fatalf("etcdtest: %v", errors.New("the cluster is not healthy after 30s (logs in "+dir+")"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return members
}

// Endpoints joins the members' client URLs with commas, as
// --etcd-endpoints takes them.
func Endpoints(members []*Server) string {
	var eps []string
	for _, m := range members {
		eps = append(eps, m.Endpoint)
	}
	return strings.Join(eps, ",")
}
