package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// iptablesVariants are the xtables multi-call binaries copied into the
// kubernetes image, the preferred one first: the plain iptables names point
// at it. nft comes first because it is Debian's default, so the rules that
// kube-proxy and a containerised kubelet write sit in the same backend as
// those of the host's own iptables and CNI plugins; both work in a testbed
// host's network namespace.
func iptablesVariants() []string { return []string{"nft", "legacy"} }

// iptablesCommands are the names kube-proxy and the kubelet run; each is a
// symbolic link to a multi-call binary, which dispatches on its name.
func iptablesCommands() []string {
	return []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore"}
}

// lddTimeout bounds one ldd run over every iptables binary and module.
const lddTimeout = time.Minute

// iptablesRoot copies Debian's iptables into the image: the multi-call
// binaries of sbinDir under /usr/sbin with their command links, the
// extension modules of xtablesDir at the same path (libxtables looks for
// them there), and every shared library these need, dynamic loader and libc
// included, at the path the loader resolved them to.
func iptablesRoot(sbinDir, xtablesDir string) ([]entry, error) {
	var root, objects []entry
	var found []string
	for _, v := range iptablesVariants() {
		multi := "xtables-" + v + "-multi"
		src := filepath.Join(sbinDir, multi)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		found = append(found, v)
		root = append(root, file("usr/sbin/"+multi, 0o755, src))
		objects = append(objects, root[len(root)-1])
		for _, c := range iptablesCommands() {
			name := strings.Replace(c, "tables", "tables-"+v, 1)
			root = append(root, symlink("usr/sbin/"+name, multi))
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no xtables-nft-multi or xtables-legacy-multi in %s: apt-get install iptables and rerun make testbin", sbinDir)
	}
	for _, c := range iptablesCommands() {
		root = append(root, symlink("usr/sbin/"+c, "xtables-"+found[0]+"-multi"))
	}

	modules, err := os.ReadDir(xtablesDir)
	if err != nil {
		return nil, fmt.Errorf("read iptables modules (apt-get install iptables and rerun make testbin): %w", err)
	}
	inImage := strings.TrimPrefix(filepath.Clean(xtablesDir), "/")
	for _, m := range modules {
		if !strings.HasSuffix(m.Name(), ".so") {
			continue
		}
		src := filepath.Join(xtablesDir, m.Name())
		name := inImage + "/" + m.Name()
		if m.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			if err != nil {
				return nil, fmt.Errorf("read iptables module link: %w", err)
			}
			root = append(root, symlink(name, target))
			continue
		}
		if !m.Type().IsRegular() {
			continue
		}
		root = append(root, file(name, 0o644, src))
		objects = append(objects, root[len(root)-1])
	}

	srcs := make([]string, len(objects))
	for i, o := range objects {
		srcs[i] = o.src
	}
	libs, err := sharedLibraries(srcs)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		root = append(root, file(strings.TrimPrefix(l, "/"), 0o755, l))
	}
	return root, nil
}

// sharedLibraries returns, sorted and without duplicates, the absolute
// paths of every shared object (transitively) needed by the given ELF files,
// as ldd resolves them on this machine.
func sharedLibraries(objects []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lddTimeout)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "ldd", objects...)
	cmd.Stdout = &out
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ldd of the iptables binaries (install libc-bin): %w: %s", err, stderr.Bytes())
	}
	return parseLdd(out.String(), len(objects) > 1)
}

// parseLdd reads ldd's output. With several files ldd prints a "file:"
// header before each file's list; a library ldd cannot find is an error
// naming the file that needs it.
func parseLdd(out string, headers bool) ([]string, error) {
	seen := map[string]bool{}
	current := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if headers && !strings.HasPrefix(line, "\t") && strings.HasSuffix(line, ":") {
			current = strings.TrimSuffix(line, ":")
			continue
		}
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("%s needs %s, which ldd cannot find: reinstall iptables and its libraries", current, f[0])
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			seen[f[2]] = true
		case len(f) >= 1 && strings.HasPrefix(f[0], "/") && !strings.HasSuffix(f[0], ":"):
			seen[f[0]] = true // the dynamic loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read ldd output: %w", err)
	}
	libs := make([]string, 0, len(seen))
	for l := range seen {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	return libs, nil
}
