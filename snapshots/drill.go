package snapshots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// DefaultDrillTimeout bounds a drill when NewDriller is given no timeout.
const DefaultDrillTimeout = 2 * time.Minute

// drillMember is the name of the one member of a drill's etcd.
const drillMember = "drill"

// Driller runs restore drills: it restores a stored snapshot with etcd's
// own restore code into a scratch directory, starts an embedded etcd on
// loopback from it, and checks that it holds what the snapshot's record
// says. One Driller runs one drill at a time.
type Driller struct {
	store   *Store
	timeout time.Duration
	// sem holds a token while a drill runs.
	sem chan struct{}
	// started, when set, is called with each drill's etcd once it has
	// started; tests use it to watch the server's lifetime.
	started func(*embed.Etcd)
}

// NewDriller returns a Driller of s's snapshots whose drills each take at
// most timeout (DefaultDrillTimeout when 0 or less).
func NewDriller(s *Store, timeout time.Duration) *Driller {
	if timeout <= 0 {
		timeout = DefaultDrillTimeout
	}
	return &Driller{store: s, timeout: timeout, sem: make(chan struct{}, 1)}
}

// Drill restores snapshot id of cluster into a scratch etcd and records
// the outcome in its record: Verified, or Failed with the reason. It
// returns the updated record and the drill's error. The decrypted snapshot
// is checked against its recorded size and sha256 before it is restored;
// the restored etcd must report the recorded key count and revision
// (otherwise the error wraps ErrMismatch).
//
// ctx and the Driller's timeout bound the drill; the embedded etcd is
// always closed and the scratch directory removed. A drill cancelled
// through ctx proves nothing either way: the record keeps the state it had
// before, and the error wraps ctx's error. Restoring and starting etcd are
// local disk work that ctx cannot interrupt; it is checked between them.
func (d *Driller) Drill(ctx context.Context, cluster, id string) (Meta, error) {
	if err := validateRef(cluster, id); err != nil {
		return Meta{}, err
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return Meta{}, fmt.Errorf("drill %s/%s: gave up waiting for the previous drill: %w", cluster, id, ctx.Err())
	}
	defer func() { <-d.sem }()
	if err := ctx.Err(); err != nil {
		return Meta{}, fmt.Errorf("drill %s/%s: %w", cluster, id, err)
	}
	m, err := d.store.MarkVerifying(cluster, id)
	if err != nil {
		return Meta{}, fmt.Errorf("drill: %w", err)
	}
	timeout := d.timeoutFor(m)
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, derr := d.run(dctx, m)
	res.Duration = time.Since(start)

	if ctx.Err() == nil && derr != nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
		// Too slow proves nothing about the snapshot (a busy server):
		// it stays unverified and is drilled again at the next start.
		cm, cerr := d.store.CancelVerifying(cluster, id)
		if cerr != nil {
			cm = m
		}
		return cm, errors.Join(fmt.Errorf("drill %s/%s did not finish within %s; the snapshot stays unverified: %w", cluster, id, timeout, ErrDrillTimeout), cerr)
	}
	if ctx.Err() != nil {
		cm, cerr := d.store.CancelVerifying(cluster, id)
		if cerr != nil {
			cm = m
		}
		return cm, errors.Join(fmt.Errorf("drill %s/%s interrupted, nothing recorded: %w", cluster, id, ctx.Err()), cerr)
	}
	if derr != nil {
		derr = fmt.Errorf("drill %s/%s: %w", cluster, id, derr)
	}
	nm, serr := d.store.SetVerification(cluster, id, res, derr)
	if serr != nil {
		return m, errors.Join(derr, serr)
	}
	return nm, derr
}

// drillRate is the least restore speed a drill's bound allows for: a
// large snapshot gets its size's worth of time on top of the timeout.
const drillRate = 16 << 20 // bytes per second

// timeoutFor is the bound of m's drill: the Driller's timeout, plus the
// time a large snapshot needs at drillRate.
func (d *Driller) timeoutFor(m Meta) time.Duration {
	return d.timeout + time.Duration(m.Size/drillRate)*time.Second
}

// run is the drill itself, in a scratch directory it always removes.
func (d *Driller) run(ctx context.Context, m Meta) (DrillResult, error) {
	work, err := os.MkdirTemp(d.store.scratch, "drill-*")
	if err != nil {
		return DrillResult{}, fmt.Errorf("create scratch directory: %w", err)
	}
	// This process made work just now: all of it is the drill's. The mark
	// lets the next Open remove it after a crash.
	defer os.RemoveAll(work)
	if err := createMark(work, d.store.sealer, roleDrill); err != nil {
		return DrillResult{}, fmt.Errorf("mark scratch directory: %w", err)
	}

	dbPath := filepath.Join(work, "snapshot.db")
	if err := d.extract(ctx, m, dbPath); err != nil {
		return DrillResult{}, err
	}
	cfg, err := loopbackConfig(drillMember, filepath.Join(work, "data"))
	if err != nil {
		return DrillResult{}, err
	}
	peerURL := cfg.AdvertisePeerUrls[0].String()
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        dbPath,
		Name:                drillMember,
		OutputDataDir:       cfg.Dir,
		PeerURLs:            []string{peerURL},
		InitialCluster:      cfg.InitialCluster,
		InitialClusterToken: cfg.InitialClusterToken,
	})
	if err != nil {
		return DrillResult{}, fmt.Errorf("etcd's restore refused the snapshot: %w", err)
	}
	if err := os.Remove(dbPath); err != nil {
		return DrillResult{}, fmt.Errorf("remove scratch copy: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return DrillResult{}, err
	}
	return d.serve(ctx, cfg, m)
}

// extract writes the decrypted, checked plaintext of m to path (0600).
func (d *Driller) extract(ctx context.Context, m Meta, path string) error {
	r, _, err := d.store.Open(m.Cluster, m.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileMode)
	if err != nil {
		return fmt.Errorf("create scratch copy: %w", err)
	}
	_, err = io.Copy(f, ctxReader{ctx: ctx, r: r})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("decrypt snapshot: %w", err)
	}
	return nil
}

// serve starts etcd on the restored data, waits until it is ready, and
// compares what it holds with m. The server is closed before it returns.
func (d *Driller) serve(ctx context.Context, cfg *embed.Config, m Meta) (DrillResult, error) {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return DrillResult{}, fmt.Errorf("start etcd on the restored data: %w", err)
	}
	defer e.Close()
	if d.started != nil {
		d.started(e)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		return DrillResult{}, fmt.Errorf("restored etcd failed: %w", err)
	case <-e.Server.StopNotify():
		return DrillResult{}, errors.New("restored etcd stopped before it was ready")
	case <-ctx.Done():
		return DrillResult{}, fmt.Errorf("restored etcd was not ready: %w", ctx.Err())
	}
	// Key "\x00" with range end "\x00" is the whole keyspace.
	resp, err := e.Server.Range(ctx, &pb.RangeRequest{Key: []byte{0}, RangeEnd: []byte{0}, CountOnly: true, Serializable: true})
	if err != nil {
		return DrillResult{}, fmt.Errorf("count the keys of the restored etcd: %w", err)
	}
	res := DrillResult{Revision: resp.Header.Revision, KeyCount: int(resp.Count)}
	if res.KeyCount != m.KeyCount {
		return res, fmt.Errorf("the restored etcd holds %d keys, the snapshot's record says %d: %w",
			res.KeyCount, m.KeyCount, ErrMismatch)
	}
	// etcd raises its revision to the last compaction when the newest keys
	// were compacted away (deleted keys), which snapshot status cannot see.
	compacted := e.Server.KV().FirstRev()
	if res.Revision != m.Revision && !(res.Revision > m.Revision && res.Revision == compacted) {
		return res, fmt.Errorf("the restored etcd is at revision %d, the snapshot's record says %d: %w",
			res.Revision, m.Revision, ErrMismatch)
	}
	return res, nil
}

// loopbackConfig is the configuration of a one-member etcd named name with
// its data in dir, with no client listener at all (the drill reads the
// server directly: no process on this machine can read the snapshot's
// data through etcd while it runs), its peer listener on a free loopback
// port (a single member talks to no peer; the peer port serves no keys),
// no metrics listener and no logs.
func loopbackConfig(name, dir string) (*embed.Config, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	token, err := randomHex(8)
	if err != nil {
		return nil, err
	}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls = nil
	cfg.AdvertiseClientUrls = nil
	cfg.ListenClientHttpUrls = nil
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = name + "=" + peer.String()
	cfg.InitialClusterToken = "singlecloud-drill-" + token
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.EnableGRPCGateway = false
	// The data is thrown away after the drill; fsync would only slow it.
	cfg.UnsafeNoFsync = true
	// One member on loopback: short ticks make it elect itself at once.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	return cfg, nil
}

// freePorts returns n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
