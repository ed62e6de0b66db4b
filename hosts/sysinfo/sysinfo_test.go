package sysinfo_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zdnscloud/singlecloud/hosts/sysinfo"
)

const gnuOutput = `@@os
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
@@kernel
6.1.0-28-amd64
@@arch
x86_64
@@cpus
8
@@meminfo
MemTotal:       16314148 kB
SwapTotal:       1000000 kB
SwapFree:         500000 kB
@@df
Filesystem     Type     1024-blocks     Used Available Capacity Mounted on
udev           devtmpfs     8131292        0   8131292       0% /dev
tmpfs          tmpfs        1631416     1492   1629924       1% /run
/dev/sda1      ext4       102626232 40123456  57243188      42% /
/dev/sdb1      xfs        209612800  1000000 208612800       1% /var/lib/my data
cgroup2        cgroup2            0        0         0       -  /sys/fs/cgroup
overlay        overlay    102626232 40123456  57243188      42% /var/lib/docker/overlay2/abc/merged
/dev/loop0     squashfs       65536    65536         0     100% /snap/core/1
@@docker
27.5.1
@@containerd
containerd containerd.io 1.7.24 88bb0ec3e9c5cdc4e19f6e7f8f3d87c47f7b0b23
@@runc
runc version 1.2.4
commit: v1.2.4-0-g6c52b49
spec: 1.2.0
@@clock
1700000010.250000000
@@end
`

const busyboxOutput = `@@os
PRETTY_NAME='Alpine Linux v3.20'
@@kernel
5.15.0
@@arch
aarch64
@@cpus
4
@@meminfo
MemTotal:        2048000 kB
SwapTotal:             0 kB
SwapFree:              0 kB
@@df
Filesystem           1024-blocks    Used Available Capacity Mounted on
/dev/root               30000000  1000000  29000000   3% /
tmpfs                     100000        0    100000   0% /dev/shm
shm                        65536        0     65536   0% /dev/shm2
/dev/mmcblk0p1             51200    20000     31200  39% /boot
@@docker
@@containerd
containerd github.com/containerd/containerd v1.6.8 9cd3357b7fd7218e4aec3eae239db1f68a5a6ec6
@@runc
@@clock
1700000009.%N
@@end
`

var (
	sent     = time.Unix(1700000000, 0)
	received = time.Unix(1700000001, 0) // midpoint 1700000000.5
)

func TestParseSamples(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want sysinfo.Info
	}{
		{"gnu", gnuOutput, sysinfo.Info{
			OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.1.0-28-amd64", Arch: "x86_64", CPUs: 8,
			MemoryBytes: 16314148 * 1024, SwapBytes: 1000000 * 1024, SwapFreeBytes: 500000 * 1024,
			Disks: []sysinfo.Disk{
				{Mount: "/", SizeBytes: 102626232 * 1024, AvailableBytes: 57243188 * 1024},
				{Mount: "/var/lib/my data", SizeBytes: 209612800 * 1024, AvailableBytes: 208612800 * 1024},
			},
			Runtimes: []sysinfo.Runtime{
				{Name: "docker", Version: "27.5.1"}, {Name: "containerd", Version: "1.7.24"}, {Name: "runc", Version: "1.2.4"},
			},
			ClockSkewSeconds: 9.75,
			CollectedAt:      received.UTC(),
		}},
		{"busybox", busyboxOutput, sysinfo.Info{
			OS: "Alpine Linux v3.20", Kernel: "5.15.0", Arch: "aarch64", CPUs: 4,
			MemoryBytes: 2048000 * 1024,
			Disks: []sysinfo.Disk{
				{Mount: "/", SizeBytes: 30000000 * 1024, AvailableBytes: 29000000 * 1024},
				{Mount: "/boot", SizeBytes: 51200 * 1024, AvailableBytes: 31200 * 1024},
			},
			Runtimes:         []sysinfo.Runtime{{Name: "containerd", Version: "1.6.8"}},
			ClockSkewSeconds: 8.5,
			CollectedAt:      received.UTC(),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sysinfo.Parse([]byte(tt.out), sent, received)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseGarbage(t *testing.T) {
	for _, out := range []string{"", "garbage\n\x00\xff@@\n", "@@cpus\n-3\n@@meminfo\nMemTotal: lots kB\n@@clock\nnow\n@@df\nFilesystem\nx y z\n"} {
		got := sysinfo.Parse([]byte(out), sent, received)
		if got.OS != "" || got.Kernel != "" || got.Arch != "" || got.CPUs != 0 || got.MemoryBytes != 0 ||
			len(got.Disks) != 0 || len(got.Runtimes) != 0 || got.ClockSkewSeconds != 0 {
			t.Errorf("Parse(%q) = %+v, want zero fields", out, got)
		}
		joined := strings.Join(got.Warnings, "\n")
		for _, section := range []string{"os:", "kernel:", "arch:", "cpus:", "memory:", "disks:", "clock:"} {
			if !strings.Contains(joined, section) {
				t.Errorf("Parse(%q): no %q warning in %q", out, section, got.Warnings)
			}
		}
	}
}

func TestClockSkew(t *testing.T) {
	base := time.Unix(1700000000, 0)
	tests := []struct {
		name           string
		clock          string
		sent, received time.Time
		want           float64
		wantWarn       bool
	}{
		{"in sync", "1700000000.500000000", base, base.Add(time.Second), 0, false},
		{"host ahead", "1700000060.000", base, base, 60, false},
		{"host behind", "1699999990.25", base, base.Add(time.Second), -10.25, false},
		{"busybox %N", "1700000005.%N", base, base, 5, false},
		{"whole seconds", "1700000005", base, base.Add(2 * time.Second), 4, false},
		{"garbage", "soon", base, base, 0, true},
		{"no sent time", "1700000005", time.Time{}, base, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sysinfo.Parse([]byte("@@clock\n"+tt.clock+"\n"), tt.sent, tt.received)
			if math.Abs(got.ClockSkewSeconds-tt.want) > 1e-6 {
				t.Errorf("skew = %v, want %v", got.ClockSkewSeconds, tt.want)
			}
			if hasWarn := strings.Contains(strings.Join(got.Warnings, "\n"), "clock:"); hasWarn != tt.wantWarn {
				t.Errorf("clock warning = %v, want %v (%q)", hasWarn, tt.wantWarn, got.Warnings)
			}
		})
	}
}

func TestDiskFilteringAndCaps(t *testing.T) {
	var b strings.Builder
	b.WriteString("@@os\nPRETTY_NAME=\"" + strings.Repeat("é", 200) + "\"\n@@kernel\n" + strings.Repeat("k", 1000) + "\n@@df\n")
	b.WriteString("Filesystem Type 1024-blocks Used Available Capacity Mounted on\n")
	for _, typ := range []string{"tmpfs", "devtmpfs", "overlay", "proc", "sysfs", "cgroup", "cgroup2", "squashfs"} {
		fmt.Fprintf(&b, "%s %s 100 1 99 1%% /pseudo/%s\n", typ, typ, typ)
	}
	b.WriteString("/dev/sda1 ext4 100 1 99 1% /dup\n/dev/sda2 ext4 200 1 99 1% /dup\n/dev/sda3 ext4 0 0 0 - /empty\nbroken line\n")
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&b, "/dev/vd%d ext4 10 1 9 10%% /mnt/%d\n", i, i)
	}
	got := sysinfo.Parse([]byte(b.String()), sent, received)

	if len(got.Disks) != sysinfo.MaxDisks {
		t.Fatalf("kept %d disks, want %d", len(got.Disks), sysinfo.MaxDisks)
	}
	if want := (sysinfo.Disk{Mount: "/dup", SizeBytes: 100 * 1024, AvailableBytes: 99 * 1024}); got.Disks[0] != want {
		t.Errorf("first disk = %+v, want %+v", got.Disks[0], want)
	}
	for _, d := range got.Disks {
		if strings.HasPrefix(d.Mount, "/pseudo/") || d.Mount == "/empty" {
			t.Errorf("kept pseudo or empty filesystem %+v", d)
		}
	}
	joined := strings.Join(got.Warnings, "\n")
	for _, w := range []string{"disks: skipped 1", "disks: kept 64, dropped 37"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no warning %q in %q", w, got.Warnings)
		}
	}
	if len(got.Kernel) != sysinfo.MaxStringBytes {
		t.Errorf("kernel kept %d bytes, want %d", len(got.Kernel), sysinfo.MaxStringBytes)
	}
	if len(got.OS) > sysinfo.MaxStringBytes || !strings.HasSuffix(got.OS, "é") {
		t.Errorf("OS kept %d bytes, not cut on a character boundary", len(got.OS))
	}

	huge := sysinfo.Parse([]byte("@@kernel\n6.1\n"+strings.Repeat("x", sysinfo.MaxOutputBytes)), sent, received)
	if huge.Kernel != "6.1" || !strings.Contains(strings.Join(huge.Warnings, "\n"), "output: truncated") {
		t.Errorf("huge output: kernel %q, warnings %q", huge.Kernel, huge.Warnings)
	}
}

func TestScriptOnLocalHost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := time.Now()
	out, err := exec.CommandContext(ctx, "sh", "-c", sysinfo.Script).Output()
	received := time.Now()
	if err != nil {
		t.Fatalf("script failed: %v\n%s", err, out)
	}
	info := sysinfo.Parse(out, sent, received)
	if info.Kernel == "" || info.Arch == "" || info.CPUs <= 0 || info.MemoryBytes <= 0 {
		t.Errorf("Parse(local output) = %+v\noutput:\n%s", info, out)
	}
	if math.Abs(info.ClockSkewSeconds) > 5 {
		t.Errorf("local clock skew %v s, want about 0", info.ClockSkewSeconds)
	}
	t.Logf("local: %+v", info)
}
