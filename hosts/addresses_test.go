package hosts

import (
	"context"
	"errors"
	"testing"

	"github.com/zdnscloud/singlecloud/internal/model"
	"github.com/zdnscloud/singlecloud/storage/storagetest"
	"github.com/zdnscloud/singlecloud/validation"
)

// A host registered at a link-local address while the flag allowed it
// stays editable once the flag is off; moving a host there is refused.
func TestLinkLocalHostKeptAfterThePolicyChanged(t *testing.T) {
	store := storagetest.Open(t)
	ctx := context.Background()
	key := testKey(t)
	allowed, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}, Addresses: validation.AddressPolicy{AllowLinkLocal: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allowed.Create(ctx, model.HostSpec{Name: "ll", Address: "169.254.10.1", SSHKey: key}); err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Store: store, Sealer: store.Sealer(), Prober: &fakeProber{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Update(ctx, "ll", model.HostSpec{Address: "169.254.10.1", Labels: map[string]string{"a": "b"}}); err != nil {
		t.Errorf("an edit keeping the registered address: %v", err)
	}
	var verrs validation.Errors
	if _, err := m.Update(ctx, "ll", model.HostSpec{Address: "169.254.10.2"}); !errors.As(err, &verrs) || verrs[0].Field != "address" {
		t.Errorf("a move to another link-local address = %v, want it refused at address", err)
	}
	if _, err := m.Create(ctx, model.HostSpec{Name: "new", Address: "fe80::1", SSHKey: key}); !errors.As(err, &verrs) || verrs[0].Field != "address" {
		t.Errorf("a new link-local host = %v, want it refused at address", err)
	}
}
