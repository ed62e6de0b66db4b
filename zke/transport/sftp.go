package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/pkg/sftp"
)

// Bounds of file transfers.
const (
	// MaxReadFile caps ReadFile: zke reads kubeconfigs, certificates and
	// small state files, never anything near this size.
	MaxReadFile = 64 << 20
	// uploadCleanupTimeout bounds removing the temporary files of a failed
	// upload, which runs on a fresh context after a cancel.
	uploadCleanupTimeout = 5 * time.Second
	// uploadTempPrefix starts the name of an upload's private temporary
	// directory, beside the target file; zke's clean-up may remove any
	// left over by a crash.
	uploadTempPrefix = ".zke-upload-"
)

// Upload writes data to the absolute path p on the node, atomically:
// readers see the old file or the whole new one, never a part. Missing
// parent directories are created (0755). The file has mode from its
// creation, before any data is written, inside a temporary directory that
// only the SSH user can enter (0700); it is synced when the server
// supports fsync@openssh.com and renamed over p with
// posix-rename@openssh.com. Use mode 0600 for keys and other secrets.
//
// ctx bounds the transfer: when it ends, Upload returns within about a
// second with an error matching ctx.Err(). On failure the temporary files
// are removed (best effort, bounded).
func (c *Client) Upload(ctx context.Context, p string, data []byte, mode os.FileMode) error {
	return c.UploadFrom(ctx, p, bytes.NewReader(data), mode)
}

// UploadFrom is Upload of what src yields, streamed: for files too large
// to hold in memory (an etcd snapshot). src is read once, to its end; a
// read error fails the upload and leaves p as it was.
func (c *Client) UploadFrom(ctx context.Context, p string, src io.Reader, mode os.FileMode) error {
	op := "upload " + p
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return c.nodeError(op, errors.New("the path must be absolute and clean"), "")
	}
	if mode.Perm() == 0 || mode&^fs.ModePerm != 0 {
		return c.nodeError(op, fmt.Errorf("mode %v: give permission bits only, such as 0600 or 0644", mode), "")
	}
	dir := path.Dir(p)
	tmpDir := path.Join(dir, uploadTempPrefix+newExecID()[:16])
	tmp := path.Join(tmpDir, path.Base(p))
	upload := func(sc *sftp.Client) error {
		if _, ok := sc.HasExtension("posix-rename@openssh.com"); !ok {
			return errors.New("the node's SFTP server lacks posix-rename@openssh.com, which atomic uploads need")
		}
		if err := sc.MkdirAll(dir); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		if err := sc.Mkdir(tmpDir); err != nil {
			return fmt.Errorf("create temporary directory %s: %w", tmpDir, err)
		}
		if err := sc.Chmod(tmpDir, 0o700); err != nil {
			return fmt.Errorf("chmod temporary directory %s: %w", tmpDir, err)
		}
		f, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return fmt.Errorf("create %s: %w", tmp, err)
		}
		if err := writeSynced(f, src, mode); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("close %s: %w", tmp, err)
		}
		if err := sc.PosixRename(tmp, p); err != nil {
			return fmt.Errorf("rename into place: %w", err)
		}
		if err := sc.RemoveDirectory(tmpDir); err != nil {
			return fmt.Errorf("remove temporary directory %s: %w", tmpDir, err)
		}
		return nil
	}
	cleanup := func(err error) {
		if err != nil {
			c.removeUploadTemp(tmpDir, tmp)
		}
	}
	return c.withSFTP(ctx, op, upload, cleanup)
}

// writeSynced sets the file's mode, writes what src yields and flushes it
// to disk when the server can.
func writeSynced(f *sftp.File, src io.Reader, mode os.FileMode) error {
	if err := f.Chmod(mode.Perm()); err != nil {
		return fmt.Errorf("chmod %s: %w", f.Name(), err)
	}
	if _, err := io.Copy(f, src); err != nil {
		return fmt.Errorf("write %s: %w", f.Name(), err)
	}
	var status *sftp.StatusError
	if err := f.Sync(); err != nil && !(errors.As(err, &status) && status.FxCode() == sftp.ErrSSHFxOpUnsupported) {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	return nil
}

// removeUploadTemp removes what a failed upload left, on a fresh bounded
// context (the caller's may have ended). The names are random, so a
// leftover never disturbs a retry.
func (c *Client) removeUploadTemp(tmpDir, tmp string) {
	ctx, cancel := context.WithTimeout(context.Background(), uploadCleanupTimeout)
	defer cancel()
	c.withSFTP(ctx, "clean up upload", func(sc *sftp.Client) error {
		sc.Remove(tmp)
		return sc.RemoveDirectory(tmpDir)
	}, nil)
}

// ReadFile returns the content of the file at path p on the node, at most
// MaxReadFile bytes. A missing file is an error matching fs.ErrNotExist.
// ctx bounds the transfer as for Upload.
func (c *Client) ReadFile(ctx context.Context, p string) ([]byte, error) {
	var data []byte
	err := c.withSFTP(ctx, "read "+p, func(sc *sftp.Client) error {
		f, err := sc.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxReadFile+1))
		if err != nil {
			return err
		}
		if len(b) > MaxReadFile {
			return fmt.Errorf("file larger than %d bytes", MaxReadFile)
		}
		data = b
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return data, nil
}

// withSFTP runs fn with an SFTP client on a session of its own, in a
// goroutine owned by the client. ctx ending closes the session, which
// fails fn's operations; withSFTP then returns an error matching ctx.Err()
// after at most closeWait, even if a dead peer keeps fn waiting (the
// keepalive or Close ends that). after, if not nil, runs in the same
// goroutine once the session is closed and its slot released, with fn's
// error: it is the place for clean-up.
func (c *Client) withSFTP(ctx context.Context, op string, fn func(*sftp.Client) error, after func(error)) error {
	release, err := c.acquireSession(ctx, op)
	if err != nil {
		return err
	}
	result := make(chan error, 1)
	if !c.spawn(func() {
		err := c.runSFTP(ctx, op, fn, release)
		result <- err
		if after != nil {
			after(err)
		}
	}) {
		release()
		return c.closedError(op)
	}
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
	}
	timer := time.NewTimer(closeWait)
	defer timer.Stop()
	select {
	case err := <-result:
		return err
	case <-timer.C:
		return c.nodeError(op, ctx.Err(), "")
	}
}

// runSFTP opens the SFTP session, runs fn, closes the session and
// releases its slot.
func (c *Client) runSFTP(ctx context.Context, op string, fn func(*sftp.Client) error, release func()) error {
	defer release()
	sess, err := c.newSession(op)
	if err != nil {
		return err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	stdin, err := sess.StdinPipe()
	if err != nil {
		return c.sftpError(ctx, op, err, "")
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return c.sftpError(ctx, op, err, "")
	}
	if err := sess.RequestSubsystem("sftp"); err != nil {
		return c.sftpError(ctx, op, fmt.Errorf("start the sftp subsystem: %w", err), noSFTPHint(c.target.Node))
	}
	sc, err := sftp.NewClientPipe(stdout, stdin)
	if err != nil {
		return c.sftpError(ctx, op, fmt.Errorf("start the sftp subsystem: %w", err), noSFTPHint(c.target.Node))
	}
	err = fn(sc)
	sess.Close() // first, so that sc.Close does not wait on a peer that stopped answering
	sc.Close()
	if err != nil {
		return c.sftpError(ctx, op, err, "")
	}
	return nil
}

// sftpError explains a failed SFTP operation: the context ended, the
// connection died, or the server refused (hint, if not empty, says what to
// do).
func (c *Client) sftpError(ctx context.Context, op string, err error, hint string) error {
	if ctx.Err() != nil {
		return c.nodeError(op, errors.Join(ctx.Err(), err), "")
	}
	select {
	case <-c.done:
		return c.closedError(op)
	default:
	}
	if hint == "" && errors.Is(err, fs.ErrPermission) {
		hint = fmt.Sprintf("user %s lacks the permission on %s: connect as root or fix the permissions", c.target.User, c.target.Node)
	}
	return c.nodeError(op, err, hint)
}

// noSFTPHint says what to do when a node does not run SFTP.
func noSFTPHint(node string) string {
	return fmt.Sprintf("enable the sftp subsystem in sshd_config on %s (Subsystem sftp internal-sftp)", node)
}
