package clustermanager

import (
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/pubsub"
)

// StoreImported lets the external benchmarks seed a store with clusters as
// a previous run would have left them.
var StoreImported = storeImported

// NewAPIServerKubeconfig starts a loopback test API server and returns a
// kubeconfig for it.
func NewAPIServerKubeconfig(tb testing.TB) string { return newAPIServer(tb, "good").kubeconfig() }

// AwaitBus lets the external benchmarks wait for a condition on the
// manager's state without polling: it checks cond now and after every
// event on bus, within bound.
func AwaitBus(tb testing.TB, bus *pubsub.Bus, bound time.Duration, what string, cond func() bool) {
	tb.Helper()
	awaitBus(tb, bus, bound, what, cond)
}
