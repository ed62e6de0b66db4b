package zke

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func fakeTools(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "log")
	tool := `#!/bin/sh
echo "$(basename "$0") $*" >> ` + shellQuote(log) + `
case "$(basename "$0")" in *-restore) cat >> ` + shellQuote(log) + `;; esac
case " $* " in *" -C "*) [ -e ` + shellQuote(filepath.Join(dir, "absent")) + ` ] && exit 1;; *" -D "*) exit 1;; esac
exit 0
`
	for _, name := range []string{"ip", "iptables", "iptables-restore", "ip6tables"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(tool), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

// runScript runs script with the fake tools first on PATH and returns
// its output and the tools' log.
func runScript(t *testing.T, dir, log, script string) (string, string) {
	t.Helper()
	_ = os.Remove(log)
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v: %s\n%s", err, out, script)
	}
	b, _ := os.ReadFile(log)
	return string(out), string(b)
}

func TestMasqCleanup(t *testing.T) {
	dir, log := fakeTools(t)
	// The fake -D succeeds once, then fails (the jump is gone).
	del := `#!/bin/sh
echo "iptables $*" >> ` + shellQuote(log) + `
case " $* " in *" -D "*) [ -e ` + shellQuote(filepath.Join(dir, "deleted")) + ` ] && exit 1; touch ` + shellQuote(filepath.Join(dir, "deleted")) + `;; esac
exit 0
`
	if err := os.WriteFile(filepath.Join(dir, "iptables"), []byte(del), 0o755); err != nil {
		t.Fatal(err)
	}
	_, got := runScript(t, dir, log, masqCleanup())
	for _, want := range []string{"-t nat -D POSTROUTING -j ZKE-MASQ\niptables -w -t nat -D POSTROUTING -j ZKE-MASQ\n", "-t nat -F ZKE-MASQ\n", "-t nat -X ZKE-MASQ\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("clean-up ran\n%s\nlacking %q", got, want)
		}
	}
}

// The host-gw clean-up deletes the routes into the cluster CIDR through
// the cluster's nodes, and only those; a gateway is matched as it is.
func TestHostGWRouteCleanup(t *testing.T) {
	dir, log := fakeTools(t)
	ip := `#!/bin/sh
echo "ip $*" >> ` + shellQuote(log) + `
case "$*" in *" show "*) printf '%s\n' '10.42.1.0/24 dev cni0 proto kernel scope link src 10.42.1.1' \
  '10.42.2.0/24 via 10.0.0.3 dev eth0' '10.42.3.0/24 via 10.0.0.9 dev eth0' '10.42.4.0/24 via 10.0.0.4 dev eth0 proto 77';; esac
exit 0
`
	if err := os.WriteFile(filepath.Join(dir, "ip"), []byte(ip), 0o755); err != nil {
		t.Fatal(err)
	}
	_, got := runScript(t, dir, log, hostGWRouteCleanup("10.42.0.0/16", []string{"10.0.0.3", "10.0.0.4", "10.0.0.*"}))
	want := "ip -4 route show root 10.42.0.0/16\nip -4 route del 10.42.2.0/24 via 10.0.0.3\nip -4 route del 10.42.4.0/24 via 10.0.0.4\n"
	if got != want {
		t.Errorf("clean-up ran\n%s\nwant\n%s", got, want)
	}
	if s := hostGWRouteCleanup("10.42.0.0/16", nil); s != "true" {
		t.Errorf("with no gateway the clean-up is %q", s)
	}
	if s := hostGWRouteCleanup("fd00:42::/56", []string{"fd00::3"}); !strings.Contains(s, "ip -6 route show root 'fd00:42::/56'") {
		t.Errorf("an IPv6 pod network's clean-up: %s", s)
	}
}
