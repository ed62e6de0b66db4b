package validation

import (
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// ValidateImport checks a request to import an existing cluster. r must
// already have had ApplyDefaults applied. The name must be a DNS-1123 label
// and the kubeconfig non-empty; whether the kubeconfig works is for the
// connector to find out, not this pure check. It returns nil, or Errors
// holding every violation; the result matches ErrInvalid.
func ValidateImport(r model.ImportRequest) error {
	var errs collector
	validateClusterName(&errs, "name", r.Name)
	if strings.TrimSpace(r.Kubeconfig) == "" {
		errs.addf("kubeconfig", "is required: paste the admin kubeconfig of the cluster to import")
	}
	return errs.err()
}
