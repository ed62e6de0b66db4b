package server

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/backup"
)

// Backup is what GET /backup streams: the database the server runs on and
// how a backup's header names it (Options.Backup).
type Backup struct {
	Source backup.Source
	Info   backup.Info
}

func (s *Server) registerBackupRoutes(api *mux.Router) {
	if s.opts.Backup == nil {
		return
	}
	api.Handle("/backup", s.handle(s.getBackup)).Methods(http.MethodGet)
}

// getBackup answers GET /backup, admin only: a consistent backup of the
// database in package backup's format (the online backup of a bbolt file,
// which only this process may open). It is written to a private temporary
// file first, so the database's read transaction lasts as long as the
// local disk needs, not as long as the client takes to download (a long
// bbolt read transaction would hold back writers that grow the file);
// then the file is streamed, each write bounded by downloadWriteTimeout.
// The backup's own checksum trailer lets the client detect a download cut
// short.
func (s *Server) getBackup(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "back up the database"); err != nil {
		return err
	}
	spool, err := os.CreateTemp("", ".singlecloud-backup-*")
	if err != nil {
		return fmt.Errorf("backup: create a temporary file: %w", err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	info := s.opts.Backup.Info
	info.Created = time.Now()
	st, err := backup.Write(spool, s.opts.Backup.Source, info)
	if err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("backup: read the temporary file: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", fmt.Sprint(st.Bytes))
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "singlecloud-"+info.Created.UTC().Format("20060102T150405Z")+".backup"))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	n, err := io.Copy(&deadlineWriter{w: w, rc: http.NewResponseController(w)}, spool)
	if err != nil {
		return fmt.Errorf("backup download stopped after %d of %d bytes: %w", n, st.Bytes, err)
	}
	name, _ := userFrom(r.Context())
	s.log.Info("database backup downloaded", "user", name, "keys", st.Records, "bytes", n)
	return nil
}
