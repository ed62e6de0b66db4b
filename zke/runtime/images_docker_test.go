package runtime_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zdnscloud/singlecloud/test/testbed"
	"github.com/zdnscloud/singlecloud/zke/runtime"
)

func (b *bed) testImageMissing(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	const absent = "singlecloud.test/absent:1"
	if ok, err := d.ImagePresent(ctx, absent); ok || err != nil {
		t.Fatalf("ImagePresent(%s) = %v, %v", absent, ok, err)
	}
	for _, run := range []func() error{
		func() error {
			_, err := d.Ensure(ctx, runtime.ContainerSpec{Name: "absent", Image: absent})
			return err
		},
		func() error { _, err := d.RunJob(ctx, runtime.ContainerSpec{Image: absent}); return err },
	} {
		err := run()
		var missing *runtime.ImageMissingError
		if !errors.As(err, &missing) || missing.Image != absent || missing.Node != b.h.Name || !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("got %v, want an ImageMissingError for %s on %s", err, absent, b.h.Name)
		}
	}
	if _, err := d.Inspect(ctx, "absent"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("a container was created without its image: %v", err)
	}
}

func (b *bed) testLoad(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	load := func() {
		t.Helper()
		f, err := os.Open(filepath.Join(b.testbin, "images", "busybox.tar"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		names, err := d.Load(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(names, " "), testbed.BusyboxImage) {
			t.Errorf("Load reported %v, want %s among them", names, testbed.BusyboxImage)
		}
		if ok, err := d.ImagePresent(ctx, testbed.BusyboxImage); !ok || err != nil {
			t.Fatalf("after Load, ImagePresent = %v, %v", ok, err)
		}
	}
	if ok, err := d.ImagePresent(ctx, testbed.BusyboxImage); ok || err != nil {
		t.Fatalf("before Load, ImagePresent = %v, %v; want false", ok, err)
	}
	load()
	// Remove the tag but keep the image (another tag holds it): loading
	// the archive again must bring the tag back.
	b.cli(t, "tag", testbed.BusyboxImage, "singlecloud.test/alias:1")
	b.cli(t, "rmi", testbed.BusyboxImage)
	if ok, err := d.ImagePresent(ctx, testbed.BusyboxImage); ok || err != nil {
		t.Fatalf("after untagging, ImagePresent = %v, %v; want false", ok, err)
	}
	load()
	b.cli(t, "rmi", "singlecloud.test/alias:1")

	// Save gives back an archive that loads again.
	rc, err := d.Save(ctx, testbed.BusyboxImage)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(saved) < 1024 {
		t.Fatalf("Save read %d bytes, %v", len(saved), err)
	}
	b.cli(t, "rmi", testbed.BusyboxImage)
	if names, err := d.Load(ctx, bytes.NewReader(saved)); err != nil || !strings.Contains(strings.Join(names, " "), testbed.BusyboxImage) {
		t.Fatalf("Load of the saved archive = %v, %v", names, err)
	}
	if _, err := d.Save(ctx, "singlecloud.test/absent:1"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Save of an absent image = %v, want ErrNotFound", err)
	}

	// A file that is not an image archive is reported by the daemon.
	_, err = d.Load(ctx, strings.NewReader(strings.Repeat("not a tar archive ", 100)))
	var se *runtime.StreamError
	var apiErr *runtime.APIError
	if !errors.As(err, &se) && !errors.As(err, &apiErr) {
		t.Errorf("Load of garbage = %v, want the daemon's error", err)
	}
}

// loadBusybox loads the busybox image unless it is there.
func (b *bed) loadBusybox(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	if ok, err := d.ImagePresent(ctx, testbed.BusyboxImage); ok || err != nil {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(filepath.Join(b.testbin, "images", "busybox.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := d.Load(ctx, f); err != nil {
		t.Fatal(err)
	}
}

func (b *bed) testPullFailure(t *testing.T) {
	d, ctx := b.docker(t, "c1"), testCtx(t)
	// Nothing listens on port 1 of the host's loopback: the daemon fails
	// at once, without DNS or a network.
	err := d.Pull(ctx, "127.0.0.1:1/zke/nothing:1", runtime.RegistryAuth{User: "u", Password: "hunter2"})
	var apiErr *runtime.APIError
	var se *runtime.StreamError
	if !errors.As(err, &apiErr) && !errors.As(err, &se) {
		t.Fatalf("Pull from a dead registry = %v, want the daemon's error", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the password shows in %v", err)
	}
	t.Logf("pull failure: %v", err)
}

func (b *bed) testPullWithCredentials(t *testing.T) {
	const user, pass = "zke", "pull-s3cret"
	reg := startRegistry(t, b.h, filepath.Join(b.testbin, "images", "busybox.tar"), "zke/busybox", "1", user, pass)
	d, ctx := b.docker(t, "c1"), testCtx(t)
	ref := reg.addr + "/zke/busybox:1"

	for _, auth := range []runtime.RegistryAuth{{}, {User: user, Password: "wrong-password"}} {
		err := d.Pull(ctx, ref, auth)
		if err == nil {
			t.Fatalf("Pull with %v succeeded", auth)
		}
		if strings.Contains(err.Error(), "wrong-password") {
			t.Errorf("the password shows in %v", err)
		}
		t.Logf("pull with %v: %v", auth, err)
	}
	if ok, err := d.ImagePresent(ctx, ref); ok || err != nil {
		t.Fatalf("after failed pulls ImagePresent = %v, %v", ok, err)
	}
	if err := d.Pull(ctx, ref, runtime.RegistryAuth{User: user, Password: pass}); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.ImagePresent(ctx, ref); !ok || err != nil {
		t.Fatalf("after Pull ImagePresent = %v, %v", ok, err)
	}
	if users := reg.authenticatedUsers(); len(users) == 0 {
		t.Error("the registry saw no authenticated request")
	}
	res, err := d.RunJob(ctx, runtime.ContainerSpec{Image: ref, Cmd: []string{"echo", "pulled"}})
	if err != nil || string(res.Logs) != "pulled\n" {
		t.Errorf("job from the pulled image: %+v, %v", res, err)
	}
}
