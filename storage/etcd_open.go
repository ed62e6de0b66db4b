package storage

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyCheckPlaintext is sealed into <prefix>.keycheck when an installation
// is created, so that a replica started with another key file is refused
// before it seals a secret no other replica can open.
const keyCheckPlaintext = "singlecloud key check"

func (e *Etcd) keyCheckKey() string { return e.opts.Prefix + ".keycheck" }

func keyCheckAAD() []byte { return AAD(".meta", "keycheck") }

// init loads the sealing key and checks or writes the schema version and
// the key check, like initSchema does for bbolt.
func (e *Etcd) init(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, e.opts.DialTimeout+e.opts.RequestTimeout)
	defer cancel()
	versionKey, _ := e.key(BucketSettings, SettingSchemaVersion)
	resp, err := e.client.Txn(ctx).Then(clientv3.OpGet(versionKey), clientv3.OpGet(e.keyCheckKey())).Commit()
	if err != nil {
		return fmt.Errorf("read the schema version: is etcd running and reachable at %s, and do the TLS options "+
			"(client certificate, key, CA) match what it requires? %w", strings.Join(e.opts.Endpoints, ","), err)
	}
	version, check := firstValue(resp.Responses[0]), firstValue(resp.Responses[1])
	if version == nil && e.opts.MustExist {
		return fmt.Errorf("prefix %s holds no singlecloud installation: check the prefix (the replicas' --etcd-prefix, "+
			"default %s) and the endpoints: %w", e.opts.Prefix, DefaultEtcdPrefix, ErrNoInstallation)
	}
	if e.sealer, err = e.loadKey(version != nil); err != nil {
		return err
	}
	if version == nil {
		sealed, err := e.sealer.Seal([]byte(keyCheckPlaintext), keyCheckAAD())
		if err != nil {
			return err
		}
		resp, err = e.client.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(versionKey), "=", 0)).
			Then(clientv3.OpPut(versionKey, SchemaVersion), clientv3.OpPut(e.keyCheckKey(), string(sealed))).
			Else(clientv3.OpGet(versionKey), clientv3.OpGet(e.keyCheckKey())).Commit()
		if err != nil {
			return fmt.Errorf("write the schema version: %w", err)
		}
		if resp.Succeeded {
			return nil
		}
		// Another replica created the installation meanwhile.
		version, check = firstValue(resp.Responses[0]), firstValue(resp.Responses[1])
	}
	incomplete := e.opts.AllowIncomplete && string(version) == SchemaVersionIncomplete
	if string(version) != SchemaVersion && !incomplete {
		return fmt.Errorf("the etcd prefix has schema version %q but this singlecloud reads version %q: "+
			"run the singlecloud release that wrote it, or restore a backup made by this release: %w",
			version, SchemaVersion, ErrSchemaVersion)
	}
	if check == nil {
		return e.writeKeyCheck(ctx)
	}
	return e.verifyKeyCheck(check)
}

// loadKey loads the key file, creating it only for a new installation: a
// new key could not open the secrets an existing one has sealed.
func (e *Etcd) loadKey(installed bool) (Sealer, error) {
	_, err := os.Stat(e.opts.KeyFile)
	if installed && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the installation exists but the key file %s is missing: copy the key file of the other "+
			"replicas (or of the database this installation was migrated from) to it", e.opts.KeyFile)
	}
	return LoadOrCreateKey(e.opts.KeyFile)
}

// writeKeyCheck adds the key check to an installation that has none.
func (e *Etcd) writeKeyCheck(ctx context.Context) error {
	sealed, err := e.sealer.Seal([]byte(keyCheckPlaintext), keyCheckAAD())
	if err != nil {
		return err
	}
	resp, err := e.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(e.keyCheckKey()), "=", 0)).
		Then(clientv3.OpPut(e.keyCheckKey(), string(sealed))).
		Else(clientv3.OpGet(e.keyCheckKey())).Commit()
	if err != nil {
		return fmt.Errorf("write the key check: %w", err)
	}
	if resp.Succeeded {
		return nil
	}
	return e.verifyKeyCheck(firstValue(resp.Responses[0]))
}

func (e *Etcd) verifyKeyCheck(sealed []byte) error {
	plain, err := e.sealer.Open(sealed, keyCheckAAD())
	if err != nil || !bytes.Equal(plain, []byte(keyCheckPlaintext)) {
		return fmt.Errorf("the key file %s is not the key this installation's secrets are sealed with: give every "+
			"replica the same key file (copy it from the replica that created the installation): %w", e.opts.KeyFile, ErrDecrypt)
	}
	return nil
}

// firstValue is the value of a single-key get inside a Txn, nil if absent.
func firstValue(r *etcdserverpb.ResponseOp) []byte {
	rr := r.GetResponseRange()
	if rr == nil || len(rr.Kvs) == 0 {
		return nil
	}
	return append([]byte{}, rr.Kvs[0].Value...)
}

// withDefaults checks the required options and fills in the defaults.
func (o EtcdOptions) withDefaults() (EtcdOptions, error) {
	if len(o.Endpoints) == 0 {
		return o, errors.New("open etcd: no endpoints: give etcd's client URLs (flag --etcd-endpoints)")
	}
	if o.KeyFile == "" {
		return o, errors.New("open etcd: no key file: give the path of the key that seals secrets, the same file on every replica")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultEtcdPrefix
	}
	if !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultEtcdDialTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultEtcdRequestTimeout
	}
	if o.MaxTxnOps <= 0 {
		o.MaxTxnOps = DefaultEtcdMaxTxnOps
	}
	if o.UpdateTimeout <= 0 {
		o.UpdateTimeout = DefaultEtcdUpdateTimeout
	}
	if o.UpdateAttempts < 0 {
		o.UpdateAttempts = 0
	}
	if o.ListPageSize <= 0 {
		o.ListPageSize = DefaultEtcdListPageSize
	}
	o.Endpoints = append([]string(nil), o.Endpoints...)
	return o, nil
}

// tlsConfig builds the client TLS configuration from the PEM files.
func (o EtcdOptions) tlsConfig() (*tls.Config, error) {
	t := o.TLS
	https := false
	for _, ep := range o.Endpoints {
		https = https || strings.HasPrefix(ep, "https://")
	}
	if t == (EtcdTLS{}) {
		if https {
			return &tls.Config{MinVersion: tls.VersionTLS12}, nil
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("open etcd: give both the client certificate and its key (--etcd-cert and --etcd-key), or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("open etcd: load client certificate %s and key %s: %w", t.CertFile, t.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("open etcd: read CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("open etcd: CA file %s holds no PEM certificate", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
