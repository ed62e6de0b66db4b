package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RequireSupportedVersion adds to err — nil, or the Errors of
// ValidateCreate or ValidateUpdate — a violation at kubernetesVersion when
// v is well formed but not one of supported, the releases the installer of
// this build can install. The check belongs beside the others so that an
// unsupported release is refused with 422 at once, with every other
// problem, instead of failing minutes later in the background; the list
// comes from the installer, so validation stays pure. An empty supported
// list checks nothing (a server without an installer refuses creates on
// its own). Any other error is returned unchanged.
func RequireSupportedVersion(err error, v string, supported []string) error {
	if len(supported) == 0 || v == "" || slices.Contains(supported, v) {
		return err
	}
	var errs Errors
	if err != nil && !errors.As(err, &errs) {
		return err
	}
	for _, e := range errs {
		if e.Field == "kubernetesVersion" {
			return err // already refused for its form
		}
	}
	sorted := slices.Clone(supported)
	slices.Sort(sorted)
	return append(errs, FieldError{
		Field:  "kubernetesVersion",
		Reason: fmt.Sprintf("%s cannot be installed by this singlecloud; supported: %s", v, strings.Join(sorted, ", ")),
	})
}
