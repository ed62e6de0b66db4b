package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// wantCert is what one certificate of testInput must look like.
type wantCert struct {
	ca     Kind
	cn     string
	orgs   []string
	dns    []string
	ips    []string
	usages []x509.ExtKeyUsage
}

func TestEnsureIssuesEveryCertificateAsSpecified(t *testing.T) {
	server := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	client := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	etcd := func(n string, ips ...string) wantCert {
		return wantCert{ca: KindEtcdCA, cn: n, dns: []string{"localhost", n}, ips: append(ips, "127.0.0.1"), usages: both}
	}
	kubelet := func(n string) wantCert {
		return wantCert{ca: KindClusterCA, cn: "system:node:" + n, orgs: []string{"system:nodes"}, usages: client}
	}
	serving := func(n string, dns []string, ips ...string) wantCert {
		return wantCert{ca: KindClusterCA, cn: "system:node:" + n, orgs: []string{"system:nodes"}, dns: dns, ips: ips, usages: server}
	}
	want := map[ID]wantCert{
		NodeID(KindAPIServer, "n1"): {ca: KindClusterCA, cn: "kube-apiserver",
			dns: []string{"api.example.com", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
				"kubernetes.default.svc.cluster.local", "localhost", "n1"},
			ips:    []string{"10.0.0.1", "10.0.0.100", "10.43.0.1", "127.0.0.1", "192.168.0.1"},
			usages: server},
		NodeID(KindEtcdServer, "n1"):     etcd("n1", "10.0.0.1", "192.168.0.1"),
		NodeID(KindEtcdPeer, "n1"):       etcd("n1", "10.0.0.1", "192.168.0.1"),
		NodeID(KindEtcdServer, "n2"):     etcd("n2", "10.0.0.2"),
		NodeID(KindEtcdPeer, "n2"):       etcd("n2", "10.0.0.2"),
		NodeID(KindEtcdServer, "n4"):     etcd("n4", "10.0.0.4"),
		NodeID(KindEtcdPeer, "n4"):       etcd("n4", "10.0.0.4"),
		NodeID(KindKubelet, "n1"):        kubelet("n1"),
		NodeID(KindKubelet, "n2"):        kubelet("n2"),
		NodeID(KindKubelet, "n3"):        kubelet("n3"),
		NodeID(KindKubelet, "n4"):        kubelet("n4"),
		NodeID(KindKubeletServing, "n1"): serving("n1", []string{"n1"}, "10.0.0.1", "192.168.0.1"),
		NodeID(KindKubeletServing, "n2"): serving("n2", []string{"n2"}, "10.0.0.2"),
		NodeID(KindKubeletServing, "n3"): serving("n3", []string{"n3", "n3.example.com"}),
		NodeID(KindKubeletServing, "n4"): serving("n4", []string{"n4"}, "10.0.0.4"),
		ID(KindAPIServerEtcdClient):      {ca: KindEtcdCA, cn: "kube-apiserver-etcd-client", usages: client},
		ID(KindAPIServerKubeletClient):   {ca: KindClusterCA, cn: "kube-apiserver-kubelet-client", usages: client},
		ID(KindFrontProxyClient):         {ca: KindFrontProxyCA, cn: "front-proxy-client", usages: client},
		ID(KindControllerManager):        {ca: KindClusterCA, cn: "system:kube-controller-manager", usages: client},
		ID(KindScheduler):                {ca: KindClusterCA, cn: "system:kube-scheduler", usages: client},
		ID(KindKubeProxy):                {ca: KindClusterCA, cn: "system:kube-proxy", usages: client},
		ID(KindAdmin):                    {ca: KindClusterCA, cn: "kube-admin", usages: client},
		ID(KindSuperAdmin):               {ca: KindClusterCA, cn: "kube-super-admin", orgs: []string{"system:masters"}, usages: client},
	}

	in := testInput()
	b, ch := mustEnsure(t, nil, in)
	if got, wantIDs := sortedIDs(b.Certs), sortedIDs(want); !slices.Equal(got, wantIDs) {
		t.Fatalf("certificates = %v\nwant %v", got, wantIDs)
	}
	wantIssued := append(sortedIDs(want), ID(KindClusterCA), ID(KindEtcdCA), ID(KindFrontProxyCA), ID(KindServiceAccount))
	slices.Sort(wantIssued)
	if got := issuedIDs(ch); !slices.Equal(got, wantIssued) || len(ch.Dropped) != 0 {
		t.Fatalf("changes = %v, dropped %v; want every certificate issued", got, ch.Dropped)
	}

	now := testNow()
	for _, k := range []Kind{KindClusterCA, KindEtcdCA, KindFrontProxyCA} {
		ca, _ := b.CA(k)
		cert := parse(t, ca)
		if !cert.IsCA || cert.Subject.CommonName != string(k) || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			t.Errorf("%s: IsCA %v, CN %q, usage %v; want a CA named %s", k, cert.IsCA, cert.Subject.CommonName, cert.KeyUsage, k)
		}
		if !cert.NotAfter.Equal(now.Add(CAValidity)) || !ca.NotAfter.Equal(cert.NotAfter) {
			t.Errorf("%s: NotAfter %v (recorded %v), want %v", k, cert.NotAfter, ca.NotAfter, now.Add(CAValidity))
		}
	}

	for id, w := range want {
		t.Run(string(id), func(t *testing.T) {
			c := b.Certs[id]
			cert := parse(t, c)
			ca, _ := b.CA(w.ca)
			pool, err := CertPool(ca.Cert)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range w.usages {
				opts := x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{u}}
				if _, err := cert.Verify(opts); err != nil {
					t.Errorf("verify against %s for usage %v: %v", w.ca, u, err)
				}
			}
			if !slices.Contains(w.usages, x509.ExtKeyUsageServerAuth) {
				opts := x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
				if _, err := cert.Verify(opts); err == nil {
					t.Errorf("a client-only certificate verifies for server auth")
				}
			}
			for _, other := range []Kind{KindClusterCA, KindEtcdCA, KindFrontProxyCA} {
				oc, _ := b.CA(other)
				if other != w.ca && cert.CheckSignatureFrom(parse(t, oc)) == nil {
					t.Errorf("also signed by %s", other)
				}
			}
			if cert.Subject.CommonName != w.cn || !slices.Equal(cert.Subject.Organization, w.orgs) {
				t.Errorf("subject CN %q O %v, want CN %q O %v", cert.Subject.CommonName, cert.Subject.Organization, w.cn, w.orgs)
			}
			if got := slices.Sorted(slices.Values(cert.DNSNames)); !slices.Equal(got, w.dns) {
				t.Errorf("DNS SANs %v, want %v", got, w.dns)
			}
			var ips []string
			for _, ip := range cert.IPAddresses {
				ips = append(ips, ip.String())
			}
			slices.Sort(ips)
			wantIPs := slices.Sorted(slices.Values(w.ips))
			if !slices.Equal(ips, wantIPs) {
				t.Errorf("IP SANs %v, want %v", ips, wantIPs)
			}
			if !slices.Equal(cert.ExtKeyUsage, w.usages) || cert.KeyUsage != x509.KeyUsageDigitalSignature || cert.IsCA {
				t.Errorf("usages %v / %v / CA %v, want %v / DigitalSignature / not a CA", cert.ExtKeyUsage, cert.KeyUsage, cert.IsCA, w.usages)
			}
			if cert.SerialNumber.Sign() <= 0 || cert.SerialNumber.BitLen() > 128 {
				t.Errorf("serial %v is not a positive 128-bit number", cert.SerialNumber)
			}
			if !cert.NotAfter.Equal(now.Add(LeafValidity)) || !c.NotAfter.Equal(cert.NotAfter) || !cert.NotBefore.Equal(now.Add(-Backdate)) {
				t.Errorf("validity %v – %v (recorded %v), want %v – %v", cert.NotBefore, cert.NotAfter, c.NotAfter, now.Add(-Backdate), now.Add(LeafValidity))
			}
			pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
			if !ok || pub.Curve != elliptic.P256() {
				t.Errorf("public key %T, want ECDSA P-256", cert.PublicKey)
			}
			if _, err := c.TLSCertificate(); err != nil {
				t.Errorf("certificate and key do not pair: %v", err)
			}
		})
	}
}

func TestServiceAccountKeyIsSeparate(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	key, err := parseKey(b.ServiceAccount.Key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := encodePublic(key)
	if err != nil || pub != b.ServiceAccount.Public {
		t.Fatalf("public key does not belong to the private key (err %v)", err)
	}
	all := []Cert{b.ClusterCA, b.EtcdCA, b.FrontProxyCA}
	for _, c := range b.Certs {
		all = append(all, c)
	}
	for _, c := range all {
		if keyMatches(parse(t, c), key) {
			t.Fatalf("the service-account key is also the key of %s", parse(t, c).Subject.CommonName)
		}
	}
}

func TestEnsureTwiceChangesNothing(t *testing.T) {
	in := testInput()
	first, _ := mustEnsure(t, nil, in)
	slices.Reverse(in.Nodes) // node order does not matter
	second, ch := mustEnsure(t, first, in)
	if !ch.Empty() {
		t.Fatalf("second Ensure changed %v, dropped %v", ch.Issued, ch.Dropped)
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatal("second Ensure returned a different bundle")
	}
}

func TestBundleJSONRoundTrip(t *testing.T) {
	in := testInput()
	b, _ := mustEnsure(t, nil, in)
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Bundle
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, &back) {
		t.Fatal("bundle changed through JSON")
	}
	again, ch := mustEnsure(t, &back, in)
	if !ch.Empty() || !reflect.DeepEqual(b, again) {
		t.Fatalf("Ensure after a JSON round trip changed %v", ch.Issued)
	}
}

func TestExpiries(t *testing.T) {
	b, _ := mustEnsure(t, nil, testInput())
	exp := b.Expiries()
	if len(exp) != len(b.Certs)+3 {
		t.Fatalf("%d expiries for %d certificates and 3 CAs", len(exp), len(b.Certs))
	}
	for id, when := range exp {
		c, err := b.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if !when.Equal(parse(t, c).NotAfter) {
			t.Errorf("%s: expiry %v, certificate says %v", id, when, parse(t, c).NotAfter)
		}
	}
	if !exp[ID(KindClusterCA)].Equal(testNow().Add(CAValidity)) {
		t.Errorf("cluster CA expiry %v", exp[ID(KindClusterCA)])
	}
}
