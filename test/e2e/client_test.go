package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const apiPath = "/apis/zcloud.cn/v1"

// client talks to one singlecloud instance as one user.
type client struct {
	t     *testing.T
	base  string
	token string
}

func digest(password string) string {
	sum := sha1.Sum([]byte(password))
	return hex.EncodeToString(sum[:])
}

// login logs in and returns a client carrying the token.
func (inst *instance) login(t *testing.T, user, password string) *client {
	t.Helper()
	c := &client{t: t, base: inst.URL}
	status, body := c.do(http.MethodPost, apiPath+"/users/"+user+"?action=login", map[string]string{"password": digest(password)})
	if status != http.StatusOK {
		t.Fatalf("login %s: %d %v", user, status, body)
	}
	c.token, _ = body["token"].(string)
	if c.token == "" {
		t.Fatalf("login %s: no token in %v", user, body)
	}
	return c
}

func (inst *instance) admin(t *testing.T) *client { return inst.login(t, "admin", inst.password) }

// anonymous returns a client without a token.
func (inst *instance) anonymous(t *testing.T) *client { return &client{t: t, base: inst.URL} }

// do sends a JSON request (body may be nil, a string of raw JSON, or a
// value to encode) and decodes a JSON object answer.
func (c *client) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	status, raw := c.raw(method, path, body)
	var out map[string]any
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			c.t.Fatalf("%s %s: answer is not a JSON object (%v): %s", method, path, err, raw)
		}
	}
	return status, out
}

func (c *client) raw(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	return resp.StatusCode, raw
}

// cluster returns the cluster resource, or the error body and status.
func (c *client) cluster(name string) (int, map[string]any) {
	return c.do(http.MethodGet, apiPath+"/clusters/"+name, nil)
}

// status returns the cluster's status, "" when it cannot be read.
func (c *client) status(name string) string {
	code, body := c.cluster(name)
	if code != http.StatusOK {
		return ""
	}
	s, _ := body["status"].(string)
	return s
}

// waitStatus waits until the cluster shows want.
func (c *client) waitStatus(name, want string, d time.Duration) map[string]any {
	c.t.Helper()
	var last map[string]any
	eventually(c.t, d, "cluster "+name+" "+want, func() (bool, string) {
		_, body := c.cluster(name)
		last = body
		s, _ := body["status"].(string)
		return s == want, s + " " + str(body["reason"])
	})
	return last
}

// importCluster imports kubeconfig as name and checks the 201 answer.
func (c *client) importCluster(name string, kubeconfig []byte) map[string]any {
	c.t.Helper()
	status, body := c.do(http.MethodPost, apiPath+"/clusters?action=import", map[string]string{"name": name, "kubeconfig": string(kubeconfig)})
	if status != http.StatusCreated {
		c.t.Fatalf("import %s: %d %v", name, status, body)
	}
	return body
}

// names lists the cluster names the user sees.
func (c *client) names() []string {
	c.t.Helper()
	status, body := c.do(http.MethodGet, apiPath+"/clusters", nil)
	if status != http.StatusOK {
		c.t.Fatalf("list clusters: %d %v", status, body)
	}
	data, _ := body["data"].([]any)
	out := []string{}
	for _, d := range data {
		m, _ := d.(map[string]any)
		out = append(out, str(m["name"]))
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// expectError checks singlecloud's error envelope.
func expectError(t *testing.T, what string, status int, body map[string]any, wantStatus int, wantCode string, mentions ...string) {
	t.Helper()
	if status != wantStatus || str(body["code"]) != wantCode || str(body["type"]) != "error" {
		t.Errorf("%s: got %d %v, want %d %s", what, status, body, wantStatus, wantCode)
		return
	}
	if s, _ := body["status"].(float64); int(s) != wantStatus {
		t.Errorf("%s: envelope status %v, want %d", what, body["status"], wantStatus)
	}
	for _, m := range mentions {
		if !strings.Contains(str(body["message"]), m) {
			t.Errorf("%s: message %q does not mention %q", what, body["message"], m)
		}
	}
}
