package runtime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestCRIVersionCodec(t *testing.T) {
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	resp = protowire.AppendString(resp, "0.1.0")
	resp = protowire.AppendTag(resp, 9, protowire.VarintType) // unknown field: skipped
	resp = protowire.AppendVarint(resp, 7)
	for i, s := range []string{"containerd", "v1.7.24", "v1"} {
		resp = protowire.AppendTag(resp, protowire.Number(i+2), protowire.BytesType)
		resp = protowire.AppendString(resp, s)
	}
	tests := []struct {
		name    string
		body    []byte
		want    CRIInfo
		wantErr bool
	}{
		{"full answer", grpcFrame(resp), CRIInfo{"containerd", "v1.7.24", "v1"}, false},
		{"empty message", grpcFrame(nil), CRIInfo{}, false},
		{"no frame", []byte{0, 0}, CRIInfo{}, true},
		{"compressed", append([]byte{1}, grpcFrame(resp)[1:]...), CRIInfo{}, true},
		{"length mismatch", grpcFrame(resp)[:len(resp)], CRIInfo{}, true},
		{"truncated field", grpcFrame(resp[:len(resp)-1]), CRIInfo{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := grpcUnframe(tc.body)
			var info CRIInfo
			if err == nil {
				info, err = parseCRIVersionResponse(msg)
			}
			if (err != nil) != tc.wantErr || info != tc.want {
				t.Errorf("got %+v, %v; want %+v (error %v)", info, err, tc.want, tc.wantErr)
			}
		})
	}
	req := criVersionRequest("v1")
	if num, typ, n := protowire.ConsumeTag(req); num != 1 || typ != protowire.BytesType || string(req[n+1:]) != "v1" {
		t.Errorf("VersionRequest encoded as %x", req)
	}
}

// h2cServer serves handler over unencrypted HTTP/2 (gRPC's transport) on a
// unix socket in a temp dir and returns the socket's path.
func h2cServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: handler, Protocols: &protos, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return sock
}

func TestCRIVersionOverHTTP2(t *testing.T) {
	answer := protowire.AppendTag(nil, 2, protowire.BytesType)
	answer = protowire.AppendString(answer, "containerd")
	tests := []struct {
		name     string
		handler  http.HandlerFunc
		wantKind error
		want     CRIInfo
	}{
		{"answers", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if r.URL.Path != criVersionPath || r.Header.Get("Content-Type") != "application/grpc" || !bytes.Equal(body, grpcFrame(criVersionRequest("v1"))) {
				w.Header().Set("Grpc-Status", "3")
				return
			}
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status")
			_, _ = w.Write(grpcFrame(answer))
			w.Header().Set("Grpc-Status", "0")
		}, nil, CRIInfo{RuntimeName: "containerd"}},
		{"no CRI service", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "12")
			w.Header().Set("Grpc-Message", "unknown%20service%20runtime.v1.RuntimeService")
		}, ErrCRIUnimplemented, CRIInfo{}},
		{"not gRPC", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no", http.StatusNotFound)
		}, ErrCRIUnreachable, CRIInfo{}},
		{"too slow", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}, ErrCRIUnreachable, CRIInfo{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sock := h2cServer(t, tc.handler)
			info, err := CRIVersion(context.Background(), &net.Dialer{}, sock, time.Second)
			if tc.wantKind == nil {
				if err != nil || info != tc.want {
					t.Fatalf("got %+v, %v; want %+v", info, err, tc.want)
				}
				return
			}
			var ce *CRIError
			if !errors.Is(err, tc.wantKind) || !errors.As(err, &ce) || ce.Socket != sock {
				t.Fatalf("got %+v, %v; want a *CRIError matching %v", info, err, tc.wantKind)
			}
		})
	}
	t.Run("no socket", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.sock")
		if _, err := CRIVersion(context.Background(), &net.Dialer{}, missing, time.Second); !errors.Is(err, ErrCRIUnreachable) {
			t.Fatalf("missing socket: %v", err)
		}
	})
}
