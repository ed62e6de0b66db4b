package runtime

import (
	"errors"
	"testing"
)

func TestParseBind(t *testing.T) {
	tests := []struct {
		in      string
		want    Bind
		canon   string
		invalid bool
	}{
		{in: "/a:/b", want: Bind{Source: "/a", Target: "/b"}, canon: "/a:/b"},
		{in: "/a/:/b/../c", want: Bind{Source: "/a", Target: "/c"}, canon: "/a:/c"},
		{in: "/a:/b:ro", want: Bind{Source: "/a", Target: "/b", ReadOnly: true}, canon: "/a:/b:ro"},
		{in: "/a:/b:rw", want: Bind{Source: "/a", Target: "/b"}, canon: "/a:/b"},
		{in: "/var/lib/kubelet:/var/lib/kubelet:rshared", want: Bind{Source: "/var/lib/kubelet", Target: "/var/lib/kubelet", Propagation: "rshared"}, canon: "/var/lib/kubelet:/var/lib/kubelet:rshared"},
		{in: "/a:/b:rslave,ro", want: Bind{Source: "/a", Target: "/b", ReadOnly: true, Propagation: "rslave"}, canon: "/a:/b:ro,rslave"},
		{in: "/a:/b:ro,rshared,Z", want: Bind{Source: "/a", Target: "/b", ReadOnly: true, Propagation: "rshared", SELinux: "Z"}, canon: "/a:/b:ro,rshared,Z"},
		{in: "/a", invalid: true},
		{in: "a:/b", invalid: true},
		{in: "/a:b", invalid: true},
		{in: "/a:/b:ro,rw", invalid: true},
		{in: "/a:/b:rshared,rslave", invalid: true},
		{in: "/a:/b:z,Z", invalid: true},
		{in: "/a:/b:bogus", invalid: true},
		{in: "/a:/b:ro:x", invalid: true},
		{in: "/a:/b:", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBind(tt.in)
			if tt.invalid {
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("ParseBind(%q) = %+v, %v; want ErrInvalidSpec", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseBind(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if got.String() != tt.canon {
				t.Errorf("String() = %q, want %q", got.String(), tt.canon)
			}
			again, err := ParseBind(got.String())
			if err != nil || again != got {
				t.Errorf("round trip of %q: %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseDevice(t *testing.T) {
	tests := []struct {
		in      string
		canon   string
		invalid bool
	}{
		{in: "/dev/kmsg", canon: "/dev/kmsg:/dev/kmsg:rwm"},
		{in: "/dev/fuse:/dev/fuse2", canon: "/dev/fuse:/dev/fuse2:rwm"},
		{in: "/dev/sda::r", canon: "/dev/sda:/dev/sda:r"},
		{in: "/dev/sda:/dev/xvda:rw", canon: "/dev/sda:/dev/xvda:rw"},
		{in: "dev/sda", invalid: true},
		{in: "/dev/sda:xvda", invalid: true},
		{in: "/dev/sda:/dev/sda:rwx", invalid: true},
		{in: "/dev/sda:/dev/sda:", invalid: true},
		{in: "/a:/b:r:w", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDevice(tt.in)
			if tt.invalid {
				if !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("ParseDevice(%q) = %+v, %v; want ErrInvalidSpec", tt.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.canon {
				t.Errorf("ParseDevice(%q) = %q, want %q", tt.in, got.String(), tt.canon)
			}
		})
	}
}
