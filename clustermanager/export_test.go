package clustermanager

import "testing"

// StoreImported lets the external benchmarks seed a store with clusters as
// a previous run would have left them.
var StoreImported = storeImported

// NewAPIServerKubeconfig starts a loopback test API server and returns a
// kubeconfig for it.
func NewAPIServerKubeconfig(tb testing.TB) string { return newAPIServer(tb, "good").kubeconfig() }
