package storage_test

import (
	"os"
	"testing"

	"github.com/zdnscloud/singlecloud/storage"
	"github.com/zdnscloud/singlecloud/storage/etcdtest"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
)

// TestMain stops the etcd the etcd tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	etcdtest.StopShared()
	os.Exit(code)
}

// TestBoltStore runs the Store contract against bbolt.
func TestBoltStore(t *testing.T) {
	storagetest.RunStoreSuite(t, func(t *testing.T) storage.Store { return storagetest.Open(t) })
}

// TestEtcdStore runs the same contract against a real etcd, each subtest
// under its own prefix.
func TestEtcdStore(t *testing.T) {
	storagetest.RunStoreSuite(t, func(t *testing.T) storage.Store {
		return etcdtest.Open(t, storage.EtcdOptions{})
	})
}
