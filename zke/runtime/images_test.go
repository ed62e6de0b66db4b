package runtime

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

func TestSplitRef(t *testing.T) {
	tests := []struct{ ref, repo, tag string }{
		{"busybox", "busybox", "latest"},
		{"busybox:1", "busybox", "1"},
		{"singlecloud.test/kubernetes:v1.36.3", "singlecloud.test/kubernetes", "v1.36.3"},
		{"registry.example:5000/zke/etcd", "registry.example:5000/zke/etcd", "latest"},
		{"registry.example:5000/zke/etcd:3.5", "registry.example:5000/zke/etcd", "3.5"},
		{"r.example/x@sha256:abcd", "r.example/x", "sha256:abcd"},
	}
	for _, tt := range tests {
		repo, tag, err := splitRef(tt.ref)
		if err != nil || repo != tt.repo || tag != tt.tag {
			t.Errorf("splitRef(%q) = %q, %q, %v; want %q, %q", tt.ref, repo, tag, err, tt.repo, tt.tag)
		}
	}
	for _, bad := range []string{"", "a b"} {
		if _, _, err := splitRef(bad); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("splitRef(%q) = %v, want ErrInvalidSpec", bad, err)
		}
	}
}

func TestPull(t *testing.T) {
	const secret = "s3cr3t-passw0rd"
	type pullReq struct {
		fromImage, tag string
		auth           map[string]string
		hasAuth        bool
	}
	var mu sync.Mutex
	var got []pullReq
	f := newFakeDaemon(t)
	f.mux.HandleFunc("POST /images/create", func(w http.ResponseWriter, r *http.Request) {
		p := pullReq{fromImage: r.URL.Query().Get("fromImage"), tag: r.URL.Query().Get("tag")}
		if h := r.Header.Get("X-Registry-Auth"); h != "" {
			p.hasAuth = true
			data, err := base64.URLEncoding.DecodeString(h)
			if err == nil {
				json.Unmarshal(data, &p.auth)
			}
		}
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"status":"Pulling from zke/etcd","id":"3.5"}`)
		fmt.Fprintln(w, `{"status":"Downloading","progressDetail":{"current":1,"total":2},"progress":"[=> ]","id":"a1"}`)
		if p.tag == "missing" {
			fmt.Fprintln(w, `{"errorDetail":{"message":"manifest for zke/etcd:missing not found"},"error":"manifest for zke/etcd:missing not found"}`)
			return
		}
		fmt.Fprintln(w, `{"status":"Status: Downloaded newer image for zke/etcd:3.5"}`)
	})
	var logs bytes.Buffer
	c := f.client(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx := context.Background()
	auth := RegistryAuth{User: "zke", Password: secret}

	if err := c.Pull(ctx, "registry.example:5000/zke/etcd:3.5", auth); err != nil {
		t.Fatal(err)
	}
	if err := c.Pull(ctx, "registry.example:5000/zke/etcd", RegistryAuth{}); err != nil {
		t.Fatal(err)
	}
	err := c.Pull(ctx, "registry.example:5000/zke/etcd:missing", RegistryAuth{User: "zke", Password: secret, Server: "mirror.example"})
	var se *StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "not found") || !strings.Contains(err.Error(), "node1") {
		t.Errorf("Pull of a missing tag = %v, want a StreamError naming the node", err)
	}
	want := []pullReq{
		{fromImage: "registry.example:5000/zke/etcd", tag: "3.5", hasAuth: true,
			auth: map[string]string{"username": "zke", "password": secret, "serveraddress": "registry.example:5000"}},
		{fromImage: "registry.example:5000/zke/etcd", tag: "latest"},
		{fromImage: "registry.example:5000/zke/etcd", tag: "missing", hasAuth: true,
			auth: map[string]string{"username": "zke", "password": secret, "serveraddress": "mirror.example"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(logs.String(), "Downloaded newer image") {
		t.Errorf("pull progress not logged:\n%s", logs.String())
	}
	for what, s := range map[string]string{"logs": logs.String(), "error": err.Error(),
		"String": auth.String(), "GoString": fmt.Sprintf("%#v", auth), "%v": fmt.Sprintf("%v", auth)} {
		if strings.Contains(s, secret) {
			t.Errorf("the password shows in %s: %s", what, s)
		}
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "auth", auth)
	if strings.Contains(logged.String(), secret) || !strings.Contains(logged.String(), "zke") {
		t.Errorf("slog shows %s", logged.String())
	}
}

func TestLoad(t *testing.T) {
	f := newFakeDaemon(t)
	f.mux.HandleFunc("POST /images/load", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Content-Type") != "application/x-tar":
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": "wrong content type " + r.Header.Get("Content-Type")})
		case string(body) == "oci":
			fmt.Fprintln(w, `{"errorDetail":{"message":"open /var/lib/docker/tmp/docker-import-1/manifest.json: no such file or directory"},"error":"open ... manifest.json"}`)
		default:
			fmt.Fprintf(w, "{\"stream\":\"Loaded image: %s\\n\"}\n", body)
			fmt.Fprintln(w, `{"stream":"Loaded image ID: sha256:abc\n"}`)
		}
	})
	c := f.client(t, Options{})
	names, err := c.Load(context.Background(), strings.NewReader("x/y:1"))
	if err != nil || fmt.Sprint(names) != "[x/y:1 sha256:abc]" {
		t.Errorf("Load = %v, %v; want [x/y:1 sha256:abc]", names, err)
	}
	_, err = c.Load(context.Background(), strings.NewReader("oci"))
	var se *StreamError
	if !errors.As(err, &se) || !strings.Contains(se.Message, "manifest.json") {
		t.Errorf("Load of an OCI-only archive = %v, want a StreamError", err)
	}
}
