package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds of an application's resource quantities. A quantity is
// arbitrary-precision ("1e19", "8Ei"), but Docker takes --memory in int64
// bytes and --cpus as a float, and Kubernetes stores limits as int64
// milli-units: out of these bounds a value used to wrap to 0 or -1 (no
// limit at all) without a word. The bounds are compared as quantities,
// before any conversion, so no check itself can overflow.
const (
	// MinMemoryLimitBytes is the smallest memory limit: Docker refuses
	// less than 6 MiB (linuxMinMemory since Docker 20.10; 4 MiB before),
	// and the install would fail on the host, after it started.
	MinMemoryLimitBytes = 6 << 20
	// MaxMemoryBytes is the largest memory request or limit, 1 PiB: more
	// than any machine has, and far below int64's 8 EiB.
	MaxMemoryBytes = 1 << 50
	// MinCPULimitMillis is the smallest CPU limit, 10m: Docker's --cpus
	// takes at least 0.01.
	MinCPULimitMillis = 10
	// MaxCPUs is the largest CPU request or limit: more cores than any
	// host singlecloud manages has, and well within every conversion.
	MaxCPUs = 1024
)

// quantityExample is how a refused quantity's reason shows good ones.
const quantityExample = "a quantity like 250m, 0.5, 128Mi or 1Gi"

// CPUMillis parses a CPU request or limit (Kubernetes notation: "500m",
// "1.5") into millicores. Zero is allowed (no limit); otherwise a limit is
// at least MinCPULimitMillis and any value at most MaxCPUs. The error
// says what is allowed; the caller names the field.
func CPUMillis(q string, limit bool) (int64, error) {
	v, err := parseQuantity(q)
	if err != nil || v.IsZero() {
		return 0, err
	}
	if limit && v.Cmp(*resource.NewMilliQuantity(MinCPULimitMillis, resource.DecimalSI)) < 0 {
		return 0, fmt.Errorf("%q is less than Docker's smallest CPU limit, %dm; give at least %dm, or 0 for no limit", shorten(q, 40), MinCPULimitMillis, MinCPULimitMillis)
	}
	if v.Cmp(*resource.NewQuantity(MaxCPUs, resource.DecimalSI)) > 0 {
		return 0, fmt.Errorf("%q is more than %d CPUs; give at most %d", shorten(q, 40), MaxCPUs, MaxCPUs)
	}
	return v.MilliValue(), nil
}

// MemoryBytes parses a memory request or limit (Kubernetes notation:
// "128Mi", "1G") into bytes, rounded up. Zero is allowed (no limit);
// otherwise a limit is at least MinMemoryLimitBytes and any value at most
// MaxMemoryBytes. The error says what is allowed; the caller names the
// field.
func MemoryBytes(q string, limit bool) (int64, error) {
	v, err := parseQuantity(q)
	if err != nil || v.IsZero() {
		return 0, err
	}
	if limit && v.Cmp(*resource.NewQuantity(MinMemoryLimitBytes, resource.BinarySI)) < 0 {
		return 0, fmt.Errorf("%q is less than Docker's smallest memory limit, 6Mi; give at least 6Mi, or 0 for no limit", shorten(q, 40))
	}
	if v.Cmp(*resource.NewQuantity(MaxMemoryBytes, resource.BinarySI)) > 0 {
		return 0, fmt.Errorf("%q is more than 1Pi; give at most 1Pi", shorten(q, 40))
	}
	return v.Value(), nil
}

// parseQuantity parses a non-negative quantity.
func parseQuantity(q string) (resource.Quantity, error) {
	v, err := resource.ParseQuantity(q)
	if err != nil || v.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("%q is not %s", shorten(q, 40), quantityExample)
	}
	return v, nil
}
