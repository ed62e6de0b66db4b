package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// busyboxTimeout bounds `busybox --list`, which answers in milliseconds.
const busyboxTimeout = 30 * time.Second

// busyboxApplets lists the applets the given busybox binary provides, sorted
// so that the image is reproducible.
func busyboxApplets(busybox string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), busyboxTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, busybox, "--list")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("list busybox applets of %s (install busybox-static and rerun make testbin): %w", busybox, err)
	}
	var applets []string
	for _, a := range strings.Fields(out.String()) {
		if !strings.Contains(a, "/") {
			applets = append(applets, a)
		}
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list printed no applets", busybox)
	}
	sort.Strings(applets)
	return applets, nil
}
