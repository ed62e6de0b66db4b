package backup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zdnscloud/singlecloud/storage"
)

// Archive is a backup whose checksum has been verified, copied to a spool
// file of its own so that what is restored is exactly what was verified.
// Close removes the spool.
type Archive struct {
	Header Header
	// Stats counts its records; Bytes is its size.
	Stats Stats
	spool *os.File
}

// Open reads a whole backup from r into a new spool file in spoolDir (mode
// 0600; "" is the system's temporary directory) and verifies it: layout,
// record order, count and SHA-256. It returns an error wrapping ErrCorrupt
// or ErrUnsupported, having removed the spool, if any of it is wrong. It
// blocks until r ends.
func Open(r io.Reader, spoolDir string) (*Archive, error) {
	f, err := os.CreateTemp(spoolDir, ".singlecloud-backup-*")
	if err != nil {
		return nil, fmt.Errorf("open backup: create a spool file: %w", err)
	}
	a := &Archive{spool: f}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	if _, err := io.Copy(f, r); err != nil {
		return nil, fmt.Errorf("open backup: read it: %w", err)
	}
	if err := a.Each(func(Record) error { return nil }); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// Each calls fn with every record in order, reading the spool again and
// verifying its checksum again at the end. It stops at fn's first error.
func (a *Archive) Each(fn func(Record) error) error {
	if _, err := a.spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read backup spool: %w", err)
	}
	d, hdr, err := newDecoder(a.spool)
	if err != nil {
		return fmt.Errorf("open backup: %w", err)
	}
	a.Header = hdr
	var st Stats
	for {
		rec, done, err := d.next()
		if err != nil {
			return fmt.Errorf("open backup: %w", err)
		}
		if done {
			break
		}
		if err := fn(rec); err != nil {
			return err
		}
		st.add(rec.Bucket)
	}
	st.Bytes = d.offset
	a.Stats = st
	return nil
}

// Check reads a whole backup from r and verifies it as Open does, without
// keeping it: for a copy being written elsewhere as it is read (a download).
func Check(r io.Reader) (Header, Stats, error) {
	var st Stats
	d, hdr, err := newDecoder(r)
	if err != nil {
		return hdr, st, fmt.Errorf("check backup: %w", err)
	}
	for {
		rec, done, err := d.next()
		if err != nil {
			return hdr, st, fmt.Errorf("check backup: %w", err)
		}
		if done {
			st.Bytes = d.offset
			return hdr, st, nil
		}
		st.add(rec.Bucket)
	}
}

// CheckKey verifies that sealer opens the backup's secrets (see
// Header.CheckKey).
func (a *Archive) CheckKey(sealer storage.Sealer, keyFile string) error {
	return a.Header.CheckKey(sealer, keyFile)
}

// Close removes the spool file.
func (a *Archive) Close() error {
	if a.spool == nil {
		return nil
	}
	name := a.spool.Name()
	a.spool.Close()
	a.spool = nil
	return os.Remove(name)
}

// CheckKey verifies that sealer opens the secrets of the backup h
// describes. keyFile names sealer's file for the error (ErrWrongKey), which
// says which key file is needed.
func (h Header) CheckKey(sealer storage.Sealer, keyFile string) error {
	plain, err := sealer.Open(h.KeyCheck, keyCheckAAD())
	if err == nil && bytes.Equal(plain, []byte(keyCheckPlaintext)) {
		return nil
	}
	return fmt.Errorf("the key file %s does not open this backup's secrets: it needs the key file of the %s it was taken "+
		"from (%s, on host %s, on %s): copy that file and give its path: %w",
		keyFile, h.Source, keyWhere(h), orUnknown(h.Host), h.Created.Format("2006-01-02 15:04 MST"),
		errors.Join(ErrWrongKey, storage.ErrDecrypt))
}

func keyWhere(h Header) string {
	if h.KeyFile == "" {
		return "key file of " + h.Origin
	}
	return h.KeyFile
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
