package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zdnscloud/singlecloud/storage"
)

// lockTTL is the lease of the etcd lock a restore or migrate holds, in
// seconds: how long a crashed one keeps the prefix locked.
const lockTTL = 10

// lockTimeout bounds taking the lock at start.
const lockTimeout = 15 * time.Second

// sealedStore is a Store with the Sealer of its key file: Bolt or Etcd.
type sealedStore interface {
	storage.Store
	Sealer() storage.Sealer
}

// openedStore is the database run serves from.
type openedStore struct {
	db sealedStore
	// close releases the lock (if any), then the database.
	close func()
	// desc names the database for the "serving" log line.
	desc string
	// etcd is db with --store etcd, nil with bolt.
	etcd *storage.Etcd
}

// openStore opens the database of cfg.Store. With etcd, the replicas of the
// prefix are joined and elect a leader afterwards (replicaSet).
func openStore(ctx context.Context, cfg config) (openedStore, error) {
	if cfg.Store != storeEtcd {
		db, err := storage.OpenBolt(cfg.DB, storage.BoltOptions{})
		if err != nil {
			return openedStore{}, fmt.Errorf("open database %s: %w", cfg.DB, err)
		}
		return openedStore{db: db, close: func() { _ = db.Close() }, desc: "bolt " + cfg.DB}, nil
	}
	e := cfg.Etcd
	db, err := storage.OpenEtcd(ctx, storage.EtcdOptions{
		Endpoints: e.Endpoints,
		Prefix:    e.Prefix,
		TLS:       storage.EtcdTLS{CertFile: e.CertFile, KeyFile: e.KeyFile, CAFile: e.CAFile},
		KeyFile:   e.SealKeyFile,
	})
	if err != nil {
		return openedStore{}, err
	}
	return openedStore{
		db:    db,
		close: func() { _ = db.Close() },
		desc:  fmt.Sprintf("etcd %s prefix %s", strings.Join(e.Endpoints, ","), db.Prefix()),
		etcd:  db,
	}, nil
}

// lockPrefix takes the lock <prefix>.lock on a lease of lockTTL seconds
// kept alive for as long as the process runs, or fails if another
// restore or migrate holds it or a singlecloud replica runs on the prefix
// (registered under <prefix>.replicas/, which a replica does only while
// the lock is free). lost is closed when the lease is lost (expired while
// etcd was unreachable, or revoked); unlock releases it at once.
func lockPrefix(ctx context.Context, client *clientv3.Client, prefix string) (unlock func(), lost <-chan struct{}, err error) {
	lockKey := prefix + ".lock"
	// The session outlives ctx's deadline; unlock ends it.
	sessCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sess, err := concurrency.NewSession(client, concurrency.WithTTL(lockTTL), concurrency.WithContext(sessCtx))
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("etcd lock %s: create a lease: %w", lockKey, err)
	}
	release := func() {
		select {
		case <-sess.Done(): // lost: nothing left to revoke
		default:
			_ = sess.Close() // revokes the lease: the lock is free at once
		}
		cancel()
	}
	tctx, tcancel := context.WithTimeout(ctx, lockTimeout)
	defer tcancel()
	mu := concurrency.NewMutex(sess, lockKey)
	if err := mu.TryLock(tctx); err != nil {
		release()
		if errors.Is(err, concurrency.ErrLocked) {
			return nil, nil, fmt.Errorf("another restore or migrate works on %s (%s holds the lock %s): wait for it to "+
				"end, or use another --etcd-prefix (a killed one's lock expires within %ds)",
				prefix, lockHolder(tctx, client, lockKey), lockKey, lockTTL)
		}
		return nil, nil, fmt.Errorf("etcd lock %s: %w", lockKey, err)
	}
	// Replicas register only while no lock key exists, so none can start
	// from here on: the ones registered before are all there are.
	resp, err := client.Get(tctx, replicasPrefix(prefix), clientv3.WithPrefix(), clientv3.WithLimit(1))
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("etcd lock %s: list the running replicas: %w", lockKey, err)
	}
	if len(resp.Kvs) > 0 {
		release()
		return nil, nil, fmt.Errorf("another singlecloud runs on %s (%s): stop every singlecloud of the prefix, or use "+
			"another --etcd-prefix (a killed one's registration expires within its --leader-ttl)",
			prefix, resp.Kvs[0].Value)
	}
	// Say who holds it, for the error of the next one. Rewriting the
	// value keeps the key's create revision, which orders the lock.
	if _, err := client.Put(tctx, mu.Key(), holderInfo(), clientv3.WithLease(sess.Lease())); err != nil {
		release()
		return nil, nil, fmt.Errorf("etcd lock %s: %w", lockKey, err)
	}
	return release, sess.Done(), nil
}

// holderInfo describes this process, stored in its lock key.
func holderInfo() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("host %s pid %d since %s", host, os.Getpid(), time.Now().UTC().Format(time.RFC3339))
}

// lockHolder describes the holder of lockKey as it wrote itself.
func lockHolder(ctx context.Context, client *clientv3.Client, lockKey string) string {
	resp, err := client.Get(ctx, lockKey+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 || len(resp.Kvs[0].Value) == 0 {
		return "a singlecloud"
	}
	return string(resp.Kvs[0].Value)
}
