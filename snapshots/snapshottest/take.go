// Package snapshottest makes real etcd snapshots for tests: an embedded
// etcd on loopback, keys written to it, and the snapshot etcd's own client
// takes of it.
package snapshottest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Source is a snapshot taken from a real etcd, with what was written to
// it.
type Source struct {
	Data     []byte
	Revision int64 // the revision after the last put
	Keys     int
	// Secret is a value written to etcd, to look for where the snapshot
	// must not appear in clear.
	Secret string
}

// Take starts an embedded etcd on loopback, puts keys keys (one of them
// holding Secret) and returns the snapshot clientv3's Snapshot takes of
// it. The etcd is stopped before Take returns.
func Take(tb testing.TB, keys int) Source {
	tb.Helper()
	cfg := loopback(tb, filepath.Join(tb.TempDir(), "etcd"))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		tb.Fatalf("start etcd: %v", err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		tb.Fatal("source etcd not ready after 30s")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{cfg.AdvertiseClientUrls[0].String()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		tb.Fatalf("etcd client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src := Source{Keys: keys, Secret: fmt.Sprintf("top-secret-token-%d", time.Now().UnixNano())}
	for i := range keys {
		value := fmt.Sprintf("value-%04d", i)
		if i == keys/2 {
			value = src.Secret
		}
		resp, err := cli.Put(ctx, fmt.Sprintf("/registry/secrets/default/s%04d", i), value)
		if err != nil {
			tb.Fatalf("put: %v", err)
		}
		src.Revision = resp.Header.Revision
	}
	rc, err := cli.Snapshot(ctx)
	if err != nil {
		tb.Fatalf("snapshot: %v", err)
	}
	defer rc.Close()
	if src.Data, err = io.ReadAll(rc); err != nil {
		tb.Fatalf("read snapshot: %v", err)
	}
	if keys > 0 && !bytes.Contains(src.Data, []byte(src.Secret)) {
		tb.Fatal("the plaintext snapshot does not hold the secret value: leak checks would prove nothing")
	}
	return src
}

// loopback is a single-member etcd configuration on two free loopback
// ports, quiet and without fsync (its data is thrown away).
func loopback(tb testing.TB, dir string) *embed.Config {
	tb.Helper()
	urls := make([]url.URL, 2)
	for i := range urls {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		defer l.Close()
		urls[i] = url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port))}
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "source", dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = urls[:1], urls[:1]
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = urls[1:], urls[1:]
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = "source=" + urls[1].String()
	cfg.Logger = "zap"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	return cfg
}
