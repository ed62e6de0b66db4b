package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/zdnscloud/singlecloud/internal/durable"
	"github.com/zdnscloud/singlecloud/server/auth"
)

// adminPasswordFile is kept beside the database and named after it,
// holding the admin's password in clear for README's login recipe (`cat
// singlecloud.admin-password`, for the default ./singlecloud.db): written
// on first start and whenever --admin-password sets it, removed when the
// password is changed through the API (which sends only a digest, so the
// file could not follow). This is its name with the default database.
const adminPasswordFile = "singlecloud" + adminPasswordExt

// adminPasswordExt ends the admin password file's name.
const adminPasswordExt = ".admin-password"

// adminPasswordFileMode is the only mode the file ever has.
const adminPasswordFileMode fs.FileMode = 0o600

// adminPasswordLen is the length of a generated admin password: 20
// characters of a 57-letter alphabet, about 116 bits.
const adminPasswordLen = 20

// adminPasswordPath is where the admin password file of cfg's database is:
// beside it, with its name (prod.db: prod.admin-password), so that two
// installations in one directory keep one each.
func adminPasswordPath(cfg config) string {
	return strings.TrimSuffix(cfg.DB, filepath.Ext(cfg.DB)) + adminPasswordExt
}

// ensureAdmin creates the admin user on first start with a random
// password, or sets the password given by flag or environment; either way
// the password is written to the admin password file (0600, atomically)
// and the log names the file, never the password. An existing file that
// others may read is made private.
func ensureAdmin(users *auth.Users, cfg config, log *slog.Logger) error {
	path := adminPasswordPath(cfg)
	if err := keepPrivate(path, log); err != nil {
		return err
	}
	if cfg.AdminPassword != "" {
		if err := users.SetAdminPassword(cfg.AdminPassword); err != nil {
			return fmt.Errorf("set admin password: %w", err)
		}
		if err := writeAdminPassword(path, cfg.AdminPassword); err != nil {
			return err
		}
		log.Info("admin password set from --admin-password; it is in the file", "file", path)
		return nil
	}
	pw, err := randomPassword(adminPasswordLen)
	if err != nil {
		return err
	}
	created, err := users.EnsureAdmin(pw)
	if err != nil {
		return fmt.Errorf("create admin user: %w", err)
	}
	if !created {
		return nil
	}
	if err := writeAdminPassword(path, pw); err != nil {
		return err
	}
	log.Info("created user admin; its password is in the file (readable by this user only)", "file", path)
	return nil
}

// forgetAdminPassword removes the admin password file after the admin's
// password was changed through the API: the server has only the new
// password's digest, so the file would hold a password that no longer
// works. Only a file of the form writeAdminPassword writes (a regular
// file, not a link, of one line) is removed: anything else at that path
// is not the server's.
func forgetAdminPassword(cfg config, log *slog.Logger) {
	path := adminPasswordPath(cfg)
	if !isAdminPasswordFile(path) {
		if _, err := os.Lstat(path); err == nil {
			log.Warn("admin password changed through the API; the file where the admin password would be is not one "+
				"singlecloud wrote, so it was left as it is", "file", path)
		}
		return
	}
	err := os.Remove(path)
	switch {
	case err == nil:
		log.Info("admin password changed through the API; the admin password file no longer holds it and was removed", "file", path)
	case errors.Is(err, fs.ErrNotExist):
	default:
		log.Warn("admin password changed through the API, but the stale admin password file could not be removed; delete it", "file", path, "err", err)
	}
}

// maxAdminPasswordFile bounds what isAdminPasswordFile reads: the server
// writes one password and a newline.
const maxAdminPasswordFile = 4 << 10

// isAdminPasswordFile tells whether path has the form writeAdminPassword
// gives the file: a regular file (not a symlink) holding one line.
func isAdminPasswordFile(path string) bool {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxAdminPasswordFile {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	line, rest, ok := strings.Cut(string(data), "\n")
	return ok && rest == "" && line != ""
}

// writeAdminPassword replaces the file at path with pw, atomically and
// durably (durable.WriteFile: a new file beside it, created exclusively
// with mode 0600, fsynced, renamed over path, the directory fsynced).
// Rename replaces whatever path is, a symlink included, and never writes
// through it.
func writeAdminPassword(path, pw string) error {
	err := durable.WriteFile(path, adminPasswordFileMode, func(w io.Writer) error {
		_, err := io.WriteString(w, pw+"\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// keepPrivate makes an existing admin password file mode 0600. It opens
// the file with O_NOFOLLOW, so a symlink is never followed: it is left as
// it is (singlecloud only ever replaces it) with a warning.
func keepPrivate(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ELOOP):
		log.Warn("the admin password file is a symlink; singlecloud does not follow it and replaces it when it writes the password", "file", path)
		return nil
	case err != nil:
		return fmt.Errorf("check %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: remove it, singlecloud keeps the admin password there", path)
	}
	if perm := info.Mode().Perm(); perm != adminPasswordFileMode {
		if err := f.Chmod(adminPasswordFileMode); err != nil {
			return fmt.Errorf("%s has mode %#o: run `chmod 600 %s`: %w", path, perm, path, err)
		}
		log.Warn("the admin password file was open to other users; made it private (0600)", "file", path, "was", fmt.Sprintf("%#o", perm))
	}
	return nil
}

func randomPassword(n int) (string, error) {
	const alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	for i := range b {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", errors.New("generate admin password: no randomness available")
		}
		b[i] = alphabet[k.Int64()]
	}
	return string(b), nil
}
