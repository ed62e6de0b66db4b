// Command listbench measures GET /apis/zcloud.cn/v1/clusters of the real
// singlecloud binary from a separate client process (this one), over HTTPS
// on loopback, as a console or a script sees it (issue 11, "Speed of the
// list, measured from outside").
//
// For each size (-sizes, default 1,000 and 10,000) it seeds a database
// once, with the cluster manager's own exported code (clustermanager.New
// and Import, so the rows are in the store's one format), then, each
// round, copies it, starts the binary on the copy and measures:
//
//   - start-up: process start → /readyz answered 200, and → the first
//     GET /clusters answered in full;
//   - GET /clusters at 1 client (p50, p99) and at 8 clients (req/s,
//     p99), without and with Accept-Encoding: gzip, and the body size;
//   - a page of 50 (?limit=50, and ?limit=50&sort=-createdAt&q=c0) at
//     1 client;
//   - the server's RSS (VmRSS of /proc/PID/status) idle after the first
//     list, and again idle after the load.
//
// The whole-list load runs only for sizes up to -full-load-max (1,000);
// larger ones get 50 sequential whole lists instead.
//
// The seeded clusters are imported with a kubeconfig whose server answers
// 404 to /version (a small server in this process), so each ends
// Unavailable at once and stays so: the server is idle between requests.
// Then again (-states, default both) with a kubeconfig pointing at a
// closed port: the clusters stay Connecting and retry in the background,
// as clusters that are down do, so the list keeps changing.
//
// Run it with `make bench` or `go run ./test/bench/listbench` from the
// repository root.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/zdnscloud/singlecloud/clustermanager"
	"github.com/zdnscloud/singlecloud/fsm"
	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/pubsub"
	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/storage"
)

const listPath = "/apis/zcloud.cn/v1/clusters"

type options struct {
	sizes    []int
	rounds   int
	states   []string
	requests int           // sequential requests at 1 client
	load     time.Duration // length of the 8-client run
	clients  int
	bin      string
	work     string
	loadAt   int  // sizes above this get only the start-up and page measurements
	console  bool // measure the web console's first page in Chromium
}

func main() {
	var (
		o      options
		sizes  string
		states string
	)
	flag.StringVar(&sizes, "sizes", "1000,10000", "comma-separated cluster counts")
	flag.IntVar(&o.rounds, "rounds", 1, "measurements per size (a fresh start of the binary each)")
	flag.StringVar(&states, "states", "unavailable,connecting", "states of the seeded clusters, each measured in turn: unavailable (settled: the server is idle) and connecting (retrying a closed port in the background)")
	flag.IntVar(&o.requests, "requests", 2000, "sequential requests per 1-client measurement")
	flag.DurationVar(&o.load, "load", 5*time.Second, "length of each 8-client measurement")
	flag.IntVar(&o.clients, "clients", 8, "clients of the concurrent measurement")
	flag.StringVar(&o.bin, "bin", "", "singlecloud binary to run (default: build ./cmd/singlecloud)")
	flag.StringVar(&o.work, "work", "", "working directory for databases (default: a temporary one, removed at the end)")
	flag.IntVar(&o.loadAt, "full-load-max", 1000, "run the whole-list load measurements only for sizes up to this")
	flag.BoolVar(&o.console, "console", true, "measure the web console's first page in headless Chromium (Debian's chromium)")
	flag.Parse()
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("-sizes: %q is not a positive count", s)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, s := range strings.Split(states, ",") {
		if s = strings.TrimSpace(s); s != "unavailable" && s != "connecting" {
			fatalf("-states: %q is not unavailable or connecting", s)
		}
		o.states = append(o.states, strings.TrimSpace(s))
	}
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "listbench: "+format+"\n", args...)
	os.Exit(1)
}

func run(o options) error {
	work := o.work
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "listbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	if o.bin == "" {
		o.bin = filepath.Join(work, "singlecloud")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", o.bin, "./cmd/singlecloud")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build ./cmd/singlecloud (run from the repository root): %w", err)
		}
		fmt.Printf("built ./cmd/singlecloud in %s\n", time.Since(start).Round(time.Millisecond))
	}
	certFile, keyFile, err := writeCert(work)
	if err != nil {
		return err
	}
	fmt.Printf("machine: %d CPUs; client: this process, HTTP/1.1 keep-alive over TLS on loopback; gzip times are the wire's (not decompressed)\n", cpus())
	for _, state := range o.states {
		for _, n := range o.sizes {
			if err := measureSize(o, work, state, n, certFile, keyFile); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureSize seeds n clusters in state and measures each round on a
// copy.
func measureSize(o options, work, state string, n int, certFile, keyFile string) error {
	seed := filepath.Join(work, fmt.Sprintf("seed-%s-%d", state, n))
	start := time.Now()
	token, err := seedStore(seed, n, state)
	if err != nil {
		return fmt.Errorf("seed %d clusters: %w", n, err)
	}
	defer os.RemoveAll(seed)
	fmt.Printf("\n== %d clusters %s (seeded in %s; %s) ==\n", n, state, time.Since(start).Round(time.Millisecond), loadavg())
	for round := 1; round <= o.rounds; round++ {
		dir := filepath.Join(work, fmt.Sprintf("run-%s-%d-%d", state, n, round))
		if err := copyDir(seed, dir); err != nil {
			return err
		}
		if err := measure(o, n, round, dir, token, certFile, keyFile); err != nil {
			return fmt.Errorf("%d clusters %s, round %d: %w", n, state, round, err)
		}
		_ = os.RemoveAll(dir)
	}
	return nil
}

// seedStore makes a database in dir holding n imported clusters named
// c00000…, and an admin token for it.
func seedStore(dir string, n int, state string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	store, err := storage.OpenBolt(filepath.Join(dir, "singlecloud.db"), storage.BoltOptions{})
	if err != nil {
		return "", err
	}
	defer store.Close()
	users, err := auth.NewUsers(store, auth.UsersOptions{HashCost: bcrypt.MinCost})
	if err != nil {
		return "", err
	}
	if _, err := users.EnsureAdmin("listbench-admin"); err != nil {
		return "", err
	}
	admin, err := users.Get(auth.AdminName)
	if err != nil {
		return "", err
	}
	tokens, err := auth.NewTokens(store, time.Now)
	if err != nil {
		return "", err
	}
	token, err := tokens.Issue(auth.AdminName, admin.TokenStamp)
	if err != nil {
		return "", err
	}

	server := "https://127.0.0.1:1" // nothing listens: Connecting, retried
	if state == "unavailable" {
		// Not a Kubernetes API server: a permanent failure, Unavailable.
		stub := httptest.NewTLSServer(http.NotFoundHandler())
		defer stub.Close()
		server = stub.URL
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: listbench}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)

	bus := pubsub.New(pubsub.Options{})
	defer bus.Close()
	mgr, err := clustermanager.New(clustermanager.Options{Store: store, Sealer: store.Sealer(), Bus: bus, HealthInterval: time.Hour})
	if err != nil {
		return "", err
	}
	if _, err := mgr.Load(context.Background()); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	defer func() { cancel(); <-done }()

	names := make(chan string)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, err := mgr.Import(ctx, model.ImportRequest{Name: name, Kubeconfig: kubeconfig}); err != nil {
					errs <- fmt.Errorf("import %s: %w", name, err)
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case names <- fmt.Sprintf("c%05d", i):
		case err := <-errs:
			close(names)
			wg.Wait()
			return "", err
		}
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return "", err
	default:
	}
	if state == "unavailable" {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			settled := 0
			for _, c := range mgr.List(false) {
				if c.Status == fsm.StateUnavailable {
					settled++
				}
			}
			if settled == n {
				break
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%d of %d clusters Unavailable after 5 minutes", settled, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return token, nil
}

// measure starts the binary on dir and prints its numbers.
func measure(o options, n, round int, dir, token, certFile, keyFile string) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(o.bin, "--listen", addr, "--db", filepath.Join(dir, "singlecloud.db"),
		"--tls-cert", certFile, "--tls-key", keyFile, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	base := "https://" + addr
	c := newClient(o.clients, token)

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	var ready time.Duration
	for {
		if time.Since(start) > 2*time.Minute {
			return errors.New("no answer within 2 minutes; see " + logf.Name())
		}
		if ready == 0 {
			if st, _, err := c.get(base+"/readyz", false); err == nil && st == http.StatusOK {
				ready = time.Since(start)
			}
		}
		if ready != 0 {
			if st, _, err := c.get(base+listPath, false); err == nil && st == http.StatusOK {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	first := time.Since(start)
	_, size, _ := c.get(base+listPath, false)
	_, gzSize, _ := c.get(base+listPath, true)
	time.Sleep(2 * time.Second)
	rssIdle := rss(cmd.Process.Pid)
	gzNote := ""
	if gzSize == size {
		gzNote = ": this server does not gzip"
	}
	fmt.Printf("round %d: start → /readyz %s, → first full list %s; body %s (gzip %s%s); RSS idle %s\n",
		round, ms(ready), ms(first), kb(size), kb(gzSize), gzNote, rssIdle)

	full := n <= o.loadAt
	for _, gz := range []bool{false, true} {
		label := "identity"
		if gz {
			label = "gzip    "
		}
		if full {
			lat, err := sequential(c, base+listPath, gz, o.requests)
			if err != nil {
				return err
			}
			rate, lat8, err := concurrent(c, base+listPath, gz, o.clients, o.load)
			if err != nil {
				return err
			}
			fmt.Printf("  whole list %s: 1 client p50 %s p99 %s | %d clients %.0f req/s p99 %s\n",
				label, ms(pct(lat, 50)), ms(pct(lat, 99)), o.clients, rate, ms(pct(lat8, 99)))
		} else {
			lat, err := sequential(c, base+listPath, gz, 50)
			if err != nil {
				return err
			}
			fmt.Printf("  whole list %s: 1 client, 50 requests: p50 %s max %s\n", label, ms(pct(lat, 50)), ms(pct(lat, 100)))
		}
	}
	for _, q := range []string{"?limit=50", "?limit=50&sort=-createdAt&q=c0"} {
		lat, err := sequential(c, base+listPath+q, false, min(o.requests, 1000))
		if err != nil {
			return err
		}
		fmt.Printf("  page %-32s 1 client p50 %s p99 %s\n", q+":", ms(pct(lat, 50)), ms(pct(lat, 99)))
	}
	if o.console {
		page, wall, err := consoleFirstPage(base, token)
		if err != nil {
			return err
		}
		fmt.Printf("  web console's first page of clusters on screen: %s after navigating (page's own mark), %s seen from Go\n", ms(page), ms(wall))
	}
	if full {
		time.Sleep(2 * time.Second)
		fmt.Printf("  RSS idle after the load: %s\n", rss(cmd.Process.Pid))
	}
	stopped = true
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
	}
	return nil
}

// client is an HTTP/1.1 client with a kept-alive connection per worker
// that reads bodies as sent (gzip is not undone: the time is the wire's).
type client struct {
	hc    *http.Client
	token string
}

func newClient(conns int, token string) *client {
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // our own loopback server
		DisableCompression:  true,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     conns * 2,
	}
	return &client{hc: &http.Client{Transport: tr, Timeout: time.Minute}, token: token}
}

// get returns the status and the size of the body as received.
func (c *client) get(url string, gz bool) (int, int64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, n, err
}

func (c *client) timed(url string, gz bool) (time.Duration, error) {
	start := time.Now()
	st, _, err := c.get(url, gz)
	d := time.Since(start)
	if err == nil && st != http.StatusOK {
		err = fmt.Errorf("GET %s: %d", url, st)
	}
	return d, err
}

func sequential(c *client, url string, gz bool, n int) ([]time.Duration, error) {
	for i := 0; i < min(n/10, 50); i++ { // warm the connection and the server's caches
		if _, err := c.timed(url, gz); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		d, err := c.timed(url, gz)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// concurrent runs clients loops of GET url for d and returns the rate and
// every latency.
func concurrent(c *client, url string, gz bool, clients int, d time.Duration) (float64, []time.Duration, error) {
	var (
		mu    sync.Mutex
		all   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for time.Now().Before(end) {
				t, err := c.timed(url, gz)
				if err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				lat = append(lat, t)
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	return float64(len(all)) / elapsed.Seconds(), all, first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// pct is the p-th percentile (nearest rank) of lat.
func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := (len(s)*p+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
func kb(n int64) string         { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
func mb(kib int64) string       { return fmt.Sprintf("%.1f MB", float64(kib)/1024) }

// rss is the process's VmRSS, and of it the anonymous memory (heap,
// stacks) and the file pages (mostly the binary's own text and data, and
// the mapped database), from /proc/PID/status.
func rss(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	kib := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if f := strings.Fields(v); ok && len(f) > 0 {
			kib[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return fmt.Sprintf("%s (anonymous %s, file %s)", mb(kib["VmRSS"]), mb(kib["RssAnon"]), mb(kib["RssFile"]))
}

func cpus() int {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	return max(1, bytes.Count(raw, []byte("\nprocessor"))+boolInt(bytes.HasPrefix(raw, []byte("processor"))))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func loadavg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "load unknown"
	}
	return "load average " + strings.Join(f[:3], " ")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// writeCert writes a self-signed certificate for 127.0.0.1.
func writeCert(dir string) (string, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "listbench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// copyDir copies the regular files of src (the database, its key) into
// a new dst.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), raw, info.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
