package pki

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// clone deep-copies b, so tests can damage the copy.
func clone(b *Bundle) *Bundle {
	out := *b
	out.Certs = make(map[ID]Cert, len(b.Certs))
	for id, c := range b.Certs {
		out.Certs[id] = c
	}
	return &out
}

func TestEnsureRepairsLeaves(t *testing.T) {
	first, _ := mustEnsure(t, nil, testInput())
	stranger, _ := mustEnsure(t, nil, testInput()) // same specs, other CAs
	admin := ID(KindAdmin)
	cases := []struct {
		name   string
		damage func(b *Bundle)
		want   Reason
	}{
		{"missing", func(b *Bundle) { delete(b.Certs, admin) }, ReasonMissing},
		{"garbage certificate", func(b *Bundle) {
			c := b.Certs[admin]
			c.Cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
			b.Certs[admin] = c
		}, ReasonUnreadable},
		{"garbage key", func(b *Bundle) { c := b.Certs[admin]; c.Key = "nope"; b.Certs[admin] = c }, ReasonUnreadable},
		{"another certificate's key", func(b *Bundle) {
			c := b.Certs[admin]
			c.Key = b.Certs[ID(KindScheduler)].Key
			b.Certs[admin] = c
		}, ReasonKeyMismatch},
		{"signed by another cluster's CA", func(b *Bundle) { b.Certs[admin] = stranger.Certs[admin] }, ReasonWrongCA},
		{"subject of another certificate", func(b *Bundle) { b.Certs[admin] = b.Certs[ID(KindScheduler)] }, ReasonChanged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			damaged := clone(first)
			tc.damage(damaged)
			before := clone(damaged)
			next, ch := mustEnsure(t, damaged, testInput())
			if len(ch.Issued) != 1 || ch.Issued[0] != (Issued{ID: admin, Reason: tc.want}) || len(ch.Dropped) != 0 {
				t.Fatalf("changes %v, dropped %v; want only %s reissued because %q", ch.Issued, ch.Dropped, admin, tc.want)
			}
			if next.ClusterCA != first.ClusterCA {
				t.Fatal("the cluster CA changed")
			}
			if !reflect.DeepEqual(damaged, before) {
				t.Fatal("Ensure modified the bundle it was given")
			}
			if cert := parse(t, next.Certs[admin]); cert.Subject.CommonName != AdminCN {
				t.Fatalf("reissued admin has CN %q", cert.Subject.CommonName)
			}
		})
	}
}

func TestEnsureRederivesServiceAccountPublicKey(t *testing.T) {
	first, _ := mustEnsure(t, nil, testInput())
	damaged := clone(first)
	damaged.ServiceAccount.Public = ""
	next, ch := mustEnsure(t, damaged, testInput())
	if next.ServiceAccount != first.ServiceAccount {
		t.Fatal("service-account key pair not restored from its private key")
	}
	if len(ch.Issued) != 1 || ch.Issued[0] != (Issued{ID: ID(KindServiceAccount), Reason: ReasonKeyMismatch}) {
		t.Fatalf("changes %v, want the service-account public key reported", ch.Issued)
	}
}

func TestEnsureRefusesToReplaceCAOrServiceAccountKey(t *testing.T) {
	first, _ := mustEnsure(t, nil, testInput())
	cases := []struct {
		name   string
		damage func(b *Bundle)
		clock  time.Time
		want   error
		says   string
	}{
		{"CA key garbage", func(b *Bundle) { b.EtcdCA.Key = "garbage" }, testNow(), ErrCorrupt, "kube-etcd-ca"},
		{"CA key of another CA", func(b *Bundle) { b.ClusterCA.Key = b.EtcdCA.Key }, testNow(), ErrCorrupt, "kube-ca"},
		{"CA is a leaf", func(b *Bundle) { b.FrontProxyCA = b.Certs[ID(KindFrontProxyClient)] }, testNow(), ErrCorrupt, "not a CA"},
		{"CA without key", func(b *Bundle) { b.ClusterCA.Key = "" }, testNow(), ErrCorrupt, "backup"},
		{"service-account key garbage", func(b *Bundle) { b.ServiceAccount.Key = "garbage" }, testNow(), ErrCorrupt, "service-account"},
		{"CA expired", func(*Bundle) {}, testNow().Add(CAValidity + time.Second), ErrCAExpired, "expired on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			damaged := clone(first)
			tc.damage(damaged)
			in := testInput()
			in.Now = at(tc.clock)
			b, _, err := Ensure(damaged, in)
			if !errors.Is(err, tc.want) || b != nil {
				t.Fatalf("Ensure = %v, %v; want %v", b != nil, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not mention %q", err, tc.says)
			}
		})
	}
}

func TestEnsureRejectsInvalidInput(t *testing.T) {
	cp := []model.Role{model.RoleControlPlane, model.RoleEtcd}
	cases := []struct {
		name   string
		change func(*Input)
		says   []string
	}{
		{"no cluster name", func(in *Input) { in.ClusterName = "" }, []string{"cluster name"}},
		{"no cluster domain", func(in *Input) { in.ClusterDomain = "" }, []string{"clusterDomain"}},
		{"bad service CIDR", func(in *Input) { in.ServiceCIDR = "10.43.0.0" }, []string{"serviceCIDR"}},
		{"service CIDR without room", func(in *Input) { in.ServiceCIDR = "10.43.0.7/32" }, []string{"no room"}},
		{"no nodes", func(in *Input) { in.Nodes = nil }, []string{"no controlplane node", "no etcd node"}},
		{"nameless and addressless node", func(in *Input) {
			in.Nodes = append(in.Nodes, Node{Roles: cp})
		}, []string{"nodes[4]: name is empty", "address is empty"}},
		{"duplicate name", func(in *Input) {
			in.Nodes = append(in.Nodes, Node{Name: "n1", Address: "10.0.0.9"})
		}, []string{`"n1" is used twice`}},
		{"empty extra SAN", func(in *Input) { in.ExtraSANs = []string{""} }, []string{"extra SAN 0"}},
		{"negative validity", func(in *Input) { in.LeafValidity = -time.Hour }, []string{"negative"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput()
			tc.change(&in)
			b, _, err := Ensure(nil, in)
			if !errors.Is(err, ErrInvalidInput) || b != nil {
				t.Fatalf("Ensure = %v, %v; want ErrInvalidInput", b != nil, err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}
