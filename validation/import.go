package validation

import (
	"errors"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/kubeconfig"
	"github.com/zdnscloud/singlecloud/internal/model"
)

// ValidateImport checks a request to import an existing cluster. r must
// already have had ApplyDefaults applied. The name must be a DNS-1123 label
// and the kubeconfig one that ValidateKubeconfig accepts; whether the
// cluster answers is for the connector to find out, not this pure check.
// It returns nil, or Errors holding every violation; the result matches
// ErrInvalid.
func ValidateImport(r model.ImportRequest) error {
	var errs collector
	validateClusterName(&errs, "name", r.Name)
	validateKubeconfig(&errs, r.Kubeconfig)
	return errs.err()
}

// ValidateKubeconfig checks a kubeconfig handed to the API (import, or a
// reconnect with a new one) without touching the host: only inline
// credentials and certificates are accepted; every exec plugin, auth
// provider and file path anywhere in the file is a violation naming its
// field, like kubeconfig.users[0].user.exec (see package
// internal/kubeconfig). It returns nil or Errors matching ErrInvalid,
// whose reasons never quote the kubeconfig.
func ValidateKubeconfig(kc string) error {
	var errs collector
	validateKubeconfig(&errs, kc)
	return errs.err()
}

func validateKubeconfig(errs *collector, kc string) {
	if strings.TrimSpace(kc) == "" {
		errs.addf("kubeconfig", "is required: paste the admin kubeconfig of the cluster to import")
		return
	}
	_, err := kubeconfig.Parse([]byte(kc))
	var kerrs kubeconfig.Errors
	switch {
	case err == nil:
	case errors.As(err, &kerrs):
		for _, fe := range kerrs {
			errs.addf(fe.Field, "%s", fe.Reason)
		}
	default:
		errs.addf("kubeconfig", "%s", err.Error())
	}
}
