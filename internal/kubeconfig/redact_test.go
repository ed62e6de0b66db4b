package kubeconfig

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://10.0.0.1:6443", "https://10.0.0.1:6443"},
		{"https://admin:s3cret@10.0.0.1:6443/version", "https://10.0.0.1:6443/version"},
		{"https://token@host", "https://host"},
		{"https://a:b@c@host:1/x", "https://host:1/x"},
		{"https://a:p/ss@host/x", "https://host/x"},
		{"https://host/api?token=s3cret&watch=1", "https://host/api?token=redacted&watch=1"},
		{"https://host/api?s3cret", "https://host/api?redacted"},
		{"https://host/version?timeout=32s&access_token=s3cret", "https://host/version?timeout=32s&access_token=redacted"},
		{"https://host/api?", "https://host/api?"},
		{"https://u:p@host/api?x=1#frag-s3cret", "https://host/api?x=redacted"},
		{"socks5://u:p@proxy:1080", "socks5://proxy:1080"},
		{"not a url", "not a url"},
		{"u:p@host", "u:p@host"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	// The error net/http returns for a request to a URL with credentials,
	// wrapped as the connector wraps it.
	u, err := url.Parse("https://admin:s3cret@127.0.0.1:1/version?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	uerr := &url.Error{Op: "Get", URL: u.String(), Err: fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused")}
	tests := []struct{ in, want string }{
		{fmt.Sprintf("https://admin:s3cret@127.0.0.1:1: %v", uerr),
			`https://127.0.0.1:1: Get "https://127.0.0.1:1/version?token=redacted": dial tcp 127.0.0.1:1: connect: connection refused`},
		{"two https://a:s3cret@x and http://b:s3cret@y/z, done", "two https://x and http://y/z, done"},
		{"no url here: s3cret", "no url here: s3cret"},
		{"'https://a:s3cret@x' <https://b:s3cret@y>", "'https://x' <https://y>"},
	}
	for _, tt := range tests {
		got := RedactText(tt.in)
		if got != tt.want {
			t.Errorf("RedactText(%q) =\n%q, want\n%q", tt.in, got, tt.want)
		}
		if strings.Contains(tt.in, "://") && strings.Contains(got, "s3cret") {
			t.Errorf("RedactText(%q) kept the secret: %q", tt.in, got)
		}
	}
}
