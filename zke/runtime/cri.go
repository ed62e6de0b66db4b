package runtime

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// criVersionPath is the gRPC method the kubelet calls first on its
// runtime ("validate CRI v1 runtime API"): a runtime that does not answer
// it can never run a kubelet's pods.
const criVersionPath = "/runtime.v1.RuntimeService/Version"

// criMaxMessage bounds the answer read from a runtime (a VersionResponse
// is four short strings).
const criMaxMessage = 64 << 10

// gRPC status codes the CRI calls tell apart.
const (
	grpcOK            = 0
	grpcUnimplemented = 12
)

// Sentinels of the CRI calls, matched with errors.Is through *CRIError.
var (
	// ErrCRIUnreachable: nothing answers gRPC on the socket (missing,
	// refused, not a gRPC server, or too slow).
	ErrCRIUnreachable = errors.New("container runtime does not answer on its CRI socket")
	// ErrCRIUnimplemented: a gRPC server answers but serves no CRI v1
	// runtime service (containerd with its cri plugin disabled, as
	// Docker's bundled containerd ships).
	ErrCRIUnimplemented = errors.New("the socket serves no CRI v1 runtime service")
)

// CRIInfo is a runtime's answer to the CRI Version call.
type CRIInfo struct {
	RuntimeName, RuntimeVersion, RuntimeAPIVersion string
}

// CRIError is a failed CRI call on one socket.
type CRIError struct {
	Socket string
	// Call is the gRPC method ("/runtime.v1.RuntimeService/Version").
	Call string
	// Kind is ErrCRIUnreachable or ErrCRIUnimplemented.
	Kind error
	// Err is the cause (dial error, gRPC status).
	Err error
}

func (e *CRIError) Error() string {
	return fmt.Sprintf("CRI call %s on %s: %v: %v", path.Base(e.Call), e.Socket, e.Kind, e.Err)
}

// Unwrap exposes the kind and the cause.
func (e *CRIError) Unwrap() []error { return []error{e.Kind, e.Err} }

// CRIVersion makes the CRI v1 Version call on the gRPC server at socket,
// reached through d (an SSH client dials the node's socket, so the call is
// made from the node, symlinks resolved there). It speaks gRPC's unary
// framing over unencrypted HTTP/2 itself, so zke needs neither a gRPC
// library nor crictl on the node. It blocks until the answer, ctx's end
// or timeout, whichever is first.
func CRIVersion(ctx context.Context, d Dialer, socket string, timeout time.Duration) (CRIInfo, error) {
	msg, err := criUnary(ctx, d, socket, criVersionPath, criVersionRequest("v1"), criMaxMessage, timeout)
	if err != nil {
		return CRIInfo{}, err
	}
	info, err := parseCRIVersionResponse(msg)
	if err != nil {
		return CRIInfo{}, &CRIError{Socket: socket, Call: criVersionPath, Kind: ErrCRIUnreachable, Err: err}
	}
	return info, nil
}

// criUnary makes one unary gRPC call, method with the encoded request
// req, on the server at socket and returns the answer's message (at most
// maxMessage bytes). Every failure is a *CRIError: ErrCRIUnimplemented
// when the server answers Unimplemented, ErrCRIUnreachable otherwise. It
// blocks until the answer, ctx's end or timeout, whichever is first.
func criUnary(ctx context.Context, d Dialer, socket, method string, req []byte, maxMessage int, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fail := func(kind, err error) ([]byte, error) {
		return nil, &CRIError{Socket: socket, Call: method, Kind: kind, Err: err}
	}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socket)
		},
		Protocols:          &protos,
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://cri"+method, bytes.NewReader(grpcFrame(req)))
	if err != nil {
		return fail(ErrCRIUnreachable, err)
	}
	hreq.Header.Set("Content-Type", "application/grpc")
	hreq.Header.Set("TE", "trailers")
	resp, err := tr.RoundTrip(hreq)
	if err != nil {
		return fail(ErrCRIUnreachable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(ErrCRIUnreachable, fmt.Errorf("HTTP status %s", resp.Status))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxMessage)+6))
	if err != nil {
		return fail(ErrCRIUnreachable, err)
	}
	if code, msg, ok := grpcStatus(resp); ok && code != grpcOK {
		kind := ErrCRIUnreachable
		if code == grpcUnimplemented {
			kind = ErrCRIUnimplemented
		}
		return fail(kind, fmt.Errorf("gRPC status %d: %s", code, msg))
	}
	if len(body) > maxMessage+5 {
		return fail(ErrCRIUnreachable, fmt.Errorf("gRPC answer is larger than the %d bytes zke reads", maxMessage))
	}
	msg, err := grpcUnframe(body)
	if err != nil {
		return fail(ErrCRIUnreachable, err)
	}
	return msg, nil
}

// grpcStatus reads grpc-status and grpc-message from the trailers, or
// from the headers of a trailers-only answer.
func grpcStatus(resp *http.Response) (int, string, bool) {
	for _, h := range []http.Header{resp.Trailer, resp.Header} {
		if s := h.Get("Grpc-Status"); s != "" {
			code, err := strconv.Atoi(s)
			if err != nil {
				return -1, "malformed grpc-status " + strconv.Quote(s), true
			}
			msg, err := url.PathUnescape(h.Get("Grpc-Message"))
			if err != nil {
				msg = h.Get("Grpc-Message")
			}
			return code, msg, true
		}
	}
	return 0, "", false
}

// criVersionRequest encodes runtime.v1.VersionRequest{version}.
func criVersionRequest(version string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendString(b, version)
}

// parseCRIVersionResponse decodes runtime.v1.VersionResponse: fields 2, 3
// and 4 are the runtime's name, version and CRI API version; others are
// skipped.
func parseCRIVersionResponse(b []byte) (CRIInfo, error) {
	var info CRIInfo
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return CRIInfo{}, fmt.Errorf("decode VersionResponse: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return CRIInfo{}, fmt.Errorf("decode VersionResponse: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeString(b)
		if n < 0 {
			return CRIInfo{}, fmt.Errorf("decode VersionResponse: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 2:
			info.RuntimeName = v
		case 3:
			info.RuntimeVersion = v
		case 4:
			info.RuntimeAPIVersion = v
		}
	}
	return info, nil
}

// grpcFrame wraps msg in gRPC's length-prefixed message framing
// (uncompressed).
func grpcFrame(msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// grpcUnframe returns the one message of a unary answer.
func grpcUnframe(b []byte) ([]byte, error) {
	if len(b) < 5 {
		return nil, fmt.Errorf("gRPC answer of %d bytes has no message", len(b))
	}
	if b[0] != 0 {
		return nil, errors.New("gRPC answer is compressed; zke asked for none")
	}
	n := binary.BigEndian.Uint32(b[1:5])
	if int64(n) != int64(len(b)-5) {
		return nil, fmt.Errorf("gRPC message length %d does not match the %d bytes received", n, len(b)-5)
	}
	return b[5:], nil
}
