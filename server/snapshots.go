package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/zdnscloud/singlecloud/snapshots"
)

const (
	// snapshotTakeDeadline is the write deadline of POST …/snapshots: the
	// take is bounded by zke's stream bound (15 min) plus connecting.
	snapshotTakeDeadline = 20 * time.Minute
	// downloadWriteTimeout bounds each write of a snapshot download: a
	// client that stops reading loses its connection, one that reads
	// slowly may take as long as it needs.
	downloadWriteTimeout = time.Minute
)

func (s *Server) registerSnapshotRoutes(api *mux.Router) {
	api.Handle("/clusters/{cluster}/snapshots", s.handle(s.listSnapshots)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}/snapshots", s.handle(s.takeSnapshot)).Methods(http.MethodPost)
	api.Handle("/clusters/{cluster}/snapshots/{snapshot}", s.handle(s.getSnapshot)).Methods(http.MethodGet)
	api.Handle("/clusters/{cluster}/snapshots/{snapshot}", s.handle(s.deleteSnapshot)).Methods(http.MethodDelete)
}

// snapshotResource is one etcd snapshot in the API's envelope; its id is
// the snapshot's id, unique within its cluster.
type snapshotResource struct {
	resourceBase
	Cluster        string     `json:"cluster"`
	Name           string     `json:"name"`
	Trigger        string     `json:"trigger"`
	Pinned         bool       `json:"pinned"`
	Member         string     `json:"member"`
	TakenBy        string     `json:"takenBy,omitempty"`
	Size           int64      `json:"size"`
	SHA256         string     `json:"sha256"`
	Revision       int64      `json:"revision"`
	KeyCount       int        `json:"keyCount"`
	StorageVersion string     `json:"storageVersion,omitempty"`
	Verification   string     `json:"verification"`
	VerifiedAt     *time.Time `json:"verifiedAt,omitempty"`
	VerifyError    string     `json:"verifyError,omitempty"`
	DrillSeconds   float64    `json:"drillSeconds,omitempty"`
}

func snapshotsURL(cluster string) string { return apiPrefix + "/clusters/" + cluster + "/snapshots" }

func newSnapshotResource(m snapshots.Meta) snapshotResource {
	self := snapshotsURL(m.Cluster) + "/" + m.ID
	links := map[string]string{"self": self, "collection": snapshotsURL(m.Cluster), "download": self + "?download=1"}
	return snapshotResource{
		resourceBase: newResourceBase(m.ID, "snapshot", links, m.CreatedAt),
		Cluster:      m.Cluster, Name: m.Name, Trigger: m.Trigger, Pinned: m.Pinned, Member: m.Member, TakenBy: m.TakenBy,
		Size: m.Size, SHA256: m.SHA256, Revision: m.Revision, KeyCount: m.KeyCount, StorageVersion: m.StorageVersion,
		Verification: m.Verification, VerifiedAt: m.VerifiedAt, VerifyError: m.VerifyError, DrillSeconds: m.DrillSeconds,
	}
}

// listSnapshots answers GET /clusters/{cluster}/snapshots: the cluster's
// snapshots, newest first, each with its drill's verdict. Admin only, like
// everything that concerns a cluster's data.
func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "list snapshots"); err != nil {
		return err
	}
	name := mux.Vars(r)["cluster"]
	list, err := s.opts.Clusters.Snapshots(name)
	if err != nil {
		return err
	}
	data := make([]any, 0, len(list))
	for _, m := range list {
		data = append(data, newSnapshotResource(m))
	}
	return writeCollection(w, "snapshot", snapshotsURL(name), data)
}

// takeSnapshot answers POST /clusters/{cluster}/snapshots: it takes an
// etcd snapshot now and answers 201 with it once it is stored; its restore
// drill follows in the background (verification "unverified" until then).
func (s *Server) takeSnapshot(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "take snapshots"); err != nil {
		return err
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(snapshotTakeDeadline))
	m, err := s.opts.Clusters.TakeSnapshot(r.Context(), mux.Vars(r)["cluster"])
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, newSnapshotResource(m))
}

// getSnapshot answers GET /clusters/{cluster}/snapshots/{snapshot}: the
// snapshot's record, or with ?download=1 its decrypted bytes (an etcd
// snapshot file, for etcdutl snapshot restore), with its sha256 in the
// X-Snapshot-Sha256 header to check the copy. The download is checked
// chunk by chunk as it streams (sendVerified): a snapshot that does not
// open (a file altered on disk, another key) is answered with the error,
// never a 200; one found altered part way ends short of its
// Content-Length, which the server then closes, so the client sees a
// broken transfer, never a whole-looking one.
func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "read snapshots"); err != nil {
		return err
	}
	vars := mux.Vars(r)
	if v := r.URL.Query().Get("download"); v == "" || v == "0" || v == "false" {
		m, err := s.opts.Clusters.Snapshot(vars["cluster"], vars["snapshot"])
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, newSnapshotResource(m))
	}
	rc, m, err := s.opts.Clusters.OpenSnapshot(vars["cluster"], vars["snapshot"])
	if err != nil {
		return err
	}
	defer rc.Close()
	begun := false
	n, err := sendVerified(&deadlineWriter{w: w, rc: http.NewResponseController(w)}, rc, func() {
		begun = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.FormatInt(m.Size, 10))
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", m.Name+".db"))
		h.Set("X-Snapshot-Sha256", m.SHA256)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	})
	switch {
	case err != nil && !begun:
		return fmt.Errorf("download of snapshot %s of cluster %s: %w", m.ID, m.Cluster, err)
	case err != nil:
		return fmt.Errorf("download of snapshot %s of cluster %s stopped after %d of %d bytes: %w", m.ID, m.Cluster, n, m.Size, err)
	}
	s.log.Info("etcd snapshot downloaded", "cluster", m.Cluster, "snapshot", m.ID, "bytes", n)
	return nil
}

// sendPiece is how much of a download sendVerified holds back.
const sendPiece = 32 << 10

// sendVerified copies src, a stream that checks itself as it is read, to
// w, each piece only once the read after it has succeeded: the last piece
// goes out only when src has reached its end without an error (for a
// snapshot: every chunk authenticated, the size and sha256 matching the
// record), so a check that fails at any point, the last included, leaves
// the copy short. begin is called once before the first byte is written,
// after at least one read succeeded (for a snapshot: its first chunk
// authenticated), so that a stream that fails to open writes nothing.
func sendVerified(w io.Writer, src io.Reader, begin func()) (int64, error) {
	var (
		written int64
		began   bool
		pending []byte
	)
	send := func(p []byte) error {
		if !began {
			began = true
			begin()
		}
		n, err := w.Write(p)
		written += int64(n)
		return err
	}
	buf, spare := make([]byte, sendPiece), make([]byte, sendPiece)
	for {
		n, err := src.Read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return written, err
		}
		if pending != nil {
			if werr := send(pending); werr != nil {
				return written, werr
			}
			pending = nil
		}
		if n > 0 {
			pending = buf[:n]
			buf, spare = spare, buf
		}
		if err != nil { // io.EOF: the stream checked out to its end
			return written, send(pending)
		}
	}
}

// deleteSnapshot answers DELETE /clusters/{cluster}/snapshots/{snapshot}.
func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) error {
	if err := requireAdmin(r, "delete snapshots"); err != nil {
		return err
	}
	vars := mux.Vars(r)
	if err := s.opts.Clusters.DeleteSnapshot(vars["cluster"], vars["snapshot"]); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deadlineWriter moves the connection's write deadline on before each
// write, so that a long download is bounded per write, not in total.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	_ = d.rc.SetWriteDeadline(time.Now().Add(downloadWriteTimeout))
	return d.w.Write(p)
}
