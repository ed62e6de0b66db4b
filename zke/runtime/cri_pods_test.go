package runtime

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// podSandbox encodes a PodSandbox with its metadata.
func podSandbox(id, name, uid, ns string) []byte {
	var md []byte
	for i, s := range []string{name, uid, ns} {
		md = protowire.AppendTag(md, protowire.Number(i+1), protowire.BytesType)
		md = protowire.AppendString(md, s)
	}
	md = protowire.AppendTag(md, 4, protowire.VarintType)
	md = protowire.AppendVarint(md, 2)
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendString(b, id)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	b = protowire.AppendBytes(b, md)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 0)
	return b
}

func TestCRIPodCalls(t *testing.T) {
	var list []byte
	for _, p := range [][4]string{{"s1", "coredns-x", "uid-1", "kube-system"}, {"s2", "web", "uid-2", "default"}} {
		list = protowire.AppendTag(list, 1, protowire.BytesType)
		list = protowire.AppendBytes(list, podSandbox(p[0], p[1], p[2], p[3]))
	}
	var mu sync.Mutex
	var calls []string
	sock := h2cServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "Grpc-Status")
		var answer []byte
		switch r.URL.Path {
		case criListPodSandboxPath:
			answer = list
		case criStopPodSandboxPath, criRemovePodSandboxPath:
			msg, err := grpcUnframe(body)
			id, n := protowire.ConsumeString(msg[1:])
			if err != nil || n < 0 || msg[0] != 0x0a {
				t.Errorf("%s: request %x", r.URL.Path, body)
			}
			mu.Lock()
			calls = append(calls, r.URL.Path+" "+id)
			mu.Unlock()
		default:
			w.Header().Set("Grpc-Status", "12")
			return
		}
		_, _ = w.Write(grpcFrame(answer))
		w.Header().Set("Grpc-Status", "0")
	})
	ctx := context.Background()
	pods, err := CRIListPods(ctx, &net.Dialer{}, sock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []CRIPod{{ID: "s1", Name: "coredns-x", UID: "uid-1", Namespace: "kube-system"}, {ID: "s2", Name: "web", UID: "uid-2", Namespace: "default"}}
	if !slices.Equal(pods, want) {
		t.Fatalf("pods %+v, want %+v", pods, want)
	}
	if err := CRIRemovePod(ctx, &net.Dialer{}, sock, "s2", time.Second); err != nil {
		t.Fatal(err)
	}
	if want := []string{criStopPodSandboxPath + " s2", criRemovePodSandboxPath + " s2"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}
