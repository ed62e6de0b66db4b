package zke

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMasqRules(t *testing.T) {
	tests := []struct {
		name, cluster, service, pod string
		ipt                         string
		want                        []string
	}{
		{"IPv4", "10.42.0.0/16", "10.43.0.0/16", "10.42.1.0/24", "iptables",
			[]string{"! -s 10.42.1.0/24 -j RETURN", "-d 10.42.0.0/16 -j RETURN", "-d 10.43.0.0/16 -j RETURN", "-j MASQUERADE"}},
		{"IPv6", "fd00:42::/56", "fd00:43::/112", "fd00:42:0:1::/64", "ip6tables",
			[]string{"! -s fd00:42:0:1::/64 -j RETURN", "-d fd00:42::/56 -j RETURN", "-d fd00:43::/112 -j RETURN", "-j MASQUERADE"}},
		{"service network of the other family", "10.42.0.0/16", "fd00:43::/112", "10.42.1.0/24", "iptables",
			[]string{"! -s 10.42.1.0/24 -j RETURN", "-d 10.42.0.0/16 -j RETURN", "-j MASQUERADE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun(t, testConfig(), nil)
			r.cfg.ClusterCIDR, r.cfg.ServiceCIDR = tt.cluster, tt.service
			var got []string
			for _, rule := range r.masqRules(tt.pod) {
				got = append(got, strings.Join(rule, " "))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rules\n%q\nwant\n%q", got, tt.want)
			}
			if ipt := iptablesFor(tt.cluster); ipt != tt.ipt {
				t.Errorf("command %s, want %s", ipt, tt.ipt)
			}
		})
	}
}

// fakeTools puts on PATH an ip, iptables, ip6tables and iptables-restore
// that log their arguments (and standard input) to log, answer -C with
// exit 1 when the file "absent" exists, and fail -D.
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

func TestPodNetworkScript(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	ws := r.nodes[1:]
	cidrs := map[string]string{"n2": "10.42.1.0/24", "n3": "10.42.2.0/24"}
	dir, log := fakeTools(t)
	out, got := runScript(t, dir, log, r.podNetworkScript(ws[0], ws, cidrs))
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	if id := parseBootID(out); id == "" || id != strings.TrimSpace(string(boot)) {
		t.Errorf("the script names boot %q, want this one's, %q:\n%s", id, boot, out)
	}
	want := "ip route replace 10.42.2.0/24 via 10.0.0.3 proto 77\n" +
		"iptables-restore -w --noflush\n" +
		"*nat\n:ZKE-MASQ - [0:0]\n-A ZKE-MASQ ! -s 10.42.1.0/24 -j RETURN\n-A ZKE-MASQ -d 10.42.0.0/16 -j RETURN\n" +
		"-A ZKE-MASQ -d 10.43.0.0/16 -j RETURN\n-A ZKE-MASQ -j MASQUERADE\nCOMMIT\n" +
		"iptables -w -t nat -C POSTROUTING -j ZKE-MASQ\n"
	if got != want {
		t.Errorf("with the jump in place, the script ran\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "absent"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, got := runScript(t, dir, log, r.podNetworkScript(ws[0], ws, cidrs)); !strings.HasSuffix(got, "iptables -w -t nat -C POSTROUTING -j ZKE-MASQ\niptables -w -t nat -A POSTROUTING -j ZKE-MASQ\n") {
		t.Errorf("without the jump, the script ran\n%s", got)
	}
	// A hostile value stays one argument.
	cidrs["n3"] = "10.42.2.0/24; reboot"
	if _, got := runScript(t, dir, log, r.podNetworkScript(ws[0], ws, cidrs)); !strings.Contains(got, "ip route replace 10.42.2.0/24; reboot via") {
		t.Errorf("a CIDR with a command ran\n%s", got)
	}
}

func TestMasqCheckScript(t *testing.T) {
	r := testRun(t, testConfig(), nil)
	dir, log := fakeTools(t)
	out, _ := runScript(t, dir, log, r.masqCheckScript("10.42.1.0/24"))
	if out != "" {
		t.Errorf("every rule in place, the check said %q", out)
	}
	if err := os.WriteFile(filepath.Join(dir, "absent"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ = runScript(t, dir, log, r.masqCheckScript("10.42.1.0/24"))
	want := "missing POSTROUTING -j ZKE-MASQ\nmissing ZKE-MASQ ! -s 10.42.1.0/24 -j RETURN\nmissing ZKE-MASQ -d 10.42.0.0/16 -j RETURN\n" +
		"missing ZKE-MASQ -d 10.43.0.0/16 -j RETURN\nmissing ZKE-MASQ -j MASQUERADE\n"
	if out != want {
		t.Errorf("no rule in place, the check said\n%s\nwant\n%s", out, want)
	}
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
