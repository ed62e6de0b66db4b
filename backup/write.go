package backup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/zdnscloud/singlecloud/storage"
)

// Source is a Store to back up: storage.Bolt or storage.Etcd.
type Source interface {
	// View runs fn in a consistent snapshot of the Store.
	View(fn func(storage.Reader) error) error
	// Sealer is the key the Store's secrets are sealed with.
	Sealer() storage.Sealer
}

// Info describes a Source for the backup's Header.
type Info struct {
	Kind Kind
	// Origin names the Store (its file, or etcd's endpoints and prefix);
	// KeyFile is the path of its key file. Neither may carry a secret.
	Origin  string
	KeyFile string
	// Created is the backup's time; zero means now.
	Created time.Time
}

// Write writes a backup of src to w: every key of every bucket of the
// schema, read in one View of src, so that it is consistent however src is
// being written meanwhile (bbolt's read transaction; etcd's revision). It
// holds no plaintext secret: values are written as stored, sealed. The
// Stats count what was written. A failed Write has written an incomplete
// backup (no trailer), which Open refuses.
//
// Write reads one bucket at a time into memory. If src runs View's
// function again (etcd, when the revision is compacted meanwhile), Write
// fails rather than write the backup twice.
func Write(w io.Writer, src Source, info Info) (Stats, error) {
	var st Stats
	hdr, err := newHeader(src.Sealer(), info)
	if err != nil {
		return st, err
	}
	enc, err := newEncoder(w, hdr)
	if err != nil {
		return st, fmt.Errorf("write backup: %w", err)
	}
	ran := false
	err = src.View(func(r storage.Reader) error {
		if ran {
			return errors.New("the store's snapshot was compacted away while the backup was read: run the backup again")
		}
		ran = true
		for _, b := range storage.Buckets() {
			kvs, err := r.List(b)
			if err != nil {
				return fmt.Errorf("read bucket %s: %w", b, err)
			}
			for _, kv := range kvs {
				if err := enc.record(Record{Bucket: b, Key: kv.Key, Value: kv.Value}); err != nil {
					return fmt.Errorf("write backup: %w", err)
				}
				st.add(b)
			}
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("back up %s: %w", info.Origin, err)
	}
	if err := enc.close(); err != nil {
		return st, fmt.Errorf("write backup: %w", err)
	}
	st.Bytes = enc.bytes
	return st, nil
}

func newHeader(sealer storage.Sealer, info Info) (Header, error) {
	if sealer == nil {
		return Header{}, errors.New("back up: the store has no key to seal the key check with")
	}
	check, err := sealer.Seal([]byte(keyCheckPlaintext), keyCheckAAD())
	if err != nil {
		return Header{}, fmt.Errorf("back up: seal the key check: %w", err)
	}
	created := info.Created
	if created.IsZero() {
		created = time.Now()
	}
	host, _ := os.Hostname()
	return Header{
		Format: FormatVersion, Source: info.Kind, Origin: info.Origin, Host: host,
		Created: created.UTC(), SchemaVersion: storage.SchemaVersion, KeyFile: info.KeyFile, KeyCheck: check,
	}, nil
}
