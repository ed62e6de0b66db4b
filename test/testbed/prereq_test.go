package testbed

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckSaysHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(TestbinEnv, t.TempDir())
	tests := []struct {
		need Need
		hint string
	}{
		{NeedTestbin, "make testbin"},
		{NeedBusybox, "apt-get install busybox-static"},
		{NeedDocker, "apt-get install docker.io"},
		{NeedNamespaces, "apt-get install iproute2"},
		{Need("bogus"), "unknown prerequisite"},
	}
	for _, tc := range tests {
		t.Run(string(tc.need), func(t *testing.T) {
			err := check(tc.need)
			if !errors.Is(err, ErrMissing) {
				t.Fatalf("check(%s) = %v, want ErrMissing", tc.need, err)
			}
			if !strings.Contains(err.Error(), tc.hint) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("check(%s) = %q, want one line saying %q", tc.need, err, tc.hint)
			}
		})
	}
}

// recordingTB records Skipf and Fatalf instead of stopping the test.
type recordingTB struct {
	testing.TB
	skipped, fatal string
}

func (r *recordingTB) Skipf(format string, args ...any)  { r.skipped = fmt.Sprintf(format, args...) }
func (r *recordingTB) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestRequireSkipsOutsideCIAndFailsInCI(t *testing.T) {
	t.Setenv(TestbinEnv, t.TempDir())
	for _, ci := range []string{"", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &recordingTB{TB: t}
			Require(r, NeedTestbin)
			got, other := r.skipped, r.fatal
			if ci == "true" {
				got, other = r.fatal, r.skipped
			}
			if !strings.Contains(got, "make testbin") || other != "" {
				t.Fatalf("skipped %q, failed %q; want only the %s to say how to get it", r.skipped, r.fatal, map[string]string{"": "skip", "true": "failure"}[ci])
			}
		})
	}
}
