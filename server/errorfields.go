package server

import (
	"errors"

	"github.com/zdnscloud/singlecloud/server/auth"
	"github.com/zdnscloud/singlecloud/validation"
)

// fieldProblem is one invalid field of a request, as the error envelope's
// "fields" list shows it: the field's JSON path (nodes[0].address) and what
// is wrong with it. The message says the same in one line; the list lets a
// client (the web console) put each problem beside its field without
// parsing the message, whose reasons may themselves contain "; ".
type fieldProblem struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// fieldProblems lists the field errors in err's tree: the cluster
// validator's and the user store's. A violation without a field (the
// "…and N more" of a long list) keeps an empty field.
func fieldProblems(err error) []fieldProblem {
	var out []fieldProblem
	var verrs validation.Errors
	if errors.As(err, &verrs) {
		for _, fe := range verrs {
			out = append(out, fieldProblem{Field: fe.Field, Reason: fe.Reason})
		}
	}
	var fe validation.FieldError
	if len(out) == 0 && errors.As(err, &fe) {
		out = append(out, fieldProblem{Field: fe.Field, Reason: fe.Reason})
	}
	for _, fe := range auth.FieldErrors(err) {
		out = append(out, fieldProblem{Field: fe.Field, Reason: fe.Message})
	}
	return out
}
