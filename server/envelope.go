package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// resourceBase is the part every resource shares (SPEC §3): embed it in a
// resource struct and its fields appear at the top level of the JSON.
type resourceBase struct {
	ID    string            `json:"id"`
	Type  string            `json:"type"`
	Links map[string]string `json:"links"`
	// CreationTimestamp is RFC 3339 UTC, omitted when unknown.
	CreationTimestamp string `json:"creationTimestamp,omitempty"`
}

// newResourceBase fills the shared fields; links must hold at least
// "self" and "collection", plus one entry per child collection.
func newResourceBase(id, typ string, links map[string]string, created time.Time) resourceBase {
	b := resourceBase{ID: id, Type: typ, Links: links}
	if !created.IsZero() {
		b.CreationTimestamp = created.UTC().Format(time.RFC3339)
	}
	return b
}

// collection is singlecloud's list envelope.
type collection struct {
	Type         string            `json:"type"`
	ResourceType string            `json:"resourceType"`
	Links        map[string]string `json:"links"`
	Data         []any             `json:"data"`
}

// errorBody is singlecloud's error envelope; the HTTP status equals Status.
type errorBody struct {
	Code    string `json:"code"`
	Status  int    `json:"status"`
	Type    string `json:"type"`
	Message string `json:"message"`
	// Fields lists each invalid field of a 422 with its path, when the
	// error is about fields; absent otherwise (singlecloud's clients read
	// only the four fields above).
	Fields []fieldProblem `json:"fields,omitempty"`
}

// writeResource answers status with one resource.
func writeResource(w http.ResponseWriter, status int, v any) error {
	return writeJSON(w, status, v)
}

// writeCollection answers 200 with a collection of resourceType whose self
// link is self. data is never rendered as null.
func writeCollection(w http.ResponseWriter, resourceType, self string, data []any) error {
	if data == nil {
		data = []any{}
	}
	return writeJSON(w, http.StatusOK, collection{
		Type:         "collection",
		ResourceType: resourceType,
		Links:        map[string]string{"self": self},
		Data:         data,
	})
}

// writeJSON encodes v before writing anything, so that an encoding failure
// still gets a clean error response.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(append(b, '\n'))
	return err
}

// decodeBody reads one JSON value from the request body into v. It answers
// 413 for a body over MaxBodyBytes (limitBody caps every body), and 422
// InvalidBodyContent, saying what to fix, for an empty or malformed body,
// an unknown field, a value of the wrong type, or data after the value.
func (s *Server) decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return s.bodyError(err)
	}
	var extra json.RawMessage
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err == nil:
		return invalidBody("request body holds more than one JSON value; send exactly one object")
	default:
		return s.bodyError(err)
	}
}

// portType is the type whose decoding errors get their own message.
var portType = reflect.TypeFor[model.Port]()

// unknownFieldPrefix is how encoding/json reports a field that v lacks; it
// has no typed error for this, so the text is read here, once.
const unknownFieldPrefix = "json: unknown field "

// bodyError explains a decoding failure to the client.
func (s *Server) bodyError(err error) error {
	var (
		maxErr    *http.MaxBytesError
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &maxErr):
		return &APIError{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Message: fmt.Sprintf("request body exceeds the limit of %d bytes; send a smaller body", s.opts.MaxBodyBytes)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &APIError{Status: http.StatusRequestTimeout, Code: CodeRequestTimeout,
			Message: "request body did not arrive within the server's read timeout; send the whole request at once"}
	case errors.Is(err, io.EOF):
		return invalidBody("request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidBody("request body is not valid JSON: it ends before the value is complete")
	case errors.As(err, &syntaxErr):
		return invalidBody(fmt.Sprintf("request body is not valid JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(syntaxErr.Error(), "json: ")))
	case errors.As(err, &typeErr) && typeErr.Type == portType:
		return invalidBody(fmt.Sprintf("field %q must be a port number, as a JSON number or a string of digits, not %s", jsonPath(typeErr.Field), typeErr.Value))
	case errors.As(err, &typeErr):
		typeErr.Field = jsonPath(typeErr.Field)
		if typeErr.Field == "" {
			return invalidBody(fmt.Sprintf("request body must be a JSON %s, not %s", jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
		}
		return invalidBody(fmt.Sprintf("field %q must be a JSON %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value))
	case strings.HasPrefix(err.Error(), unknownFieldPrefix):
		return invalidBody(fmt.Sprintf("unknown field %s in request body; remove it", shortened(strings.TrimPrefix(err.Error(), unknownFieldPrefix))))
	}
	return fmt.Errorf("read request body: %w", err)
}

// maxEchoedLen bounds what an error message repeats of the request: a
// field name may be as long as the body, and a typo is recognised by its
// first characters.
const maxEchoedLen = 100

// shortened cuts s to maxEchoedLen bytes (on a character boundary), marking
// the cut with "…".
func shortened(s string) string {
	if len(s) <= maxEchoedLen {
		return s
	}
	return strings.ToValidUTF8(s[:maxEchoedLen], "") + "…"
}

// jsonPath turns encoding/json's field path into the client's: the path
// names embedded Go structs (clusterBody's ClusterConfig) too, which the
// client never sees. Every JSON name of the API starts in lower case, every
// Go type name in upper case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && (p[0] < 'A' || p[0] > 'Z') {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// jsonKind names a Go kind as the JSON type a client should send.
func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "number"
	}
	return "value of another type"
}

// invalidBody is a 422 InvalidBodyContent error.
func invalidBody(msg string) *APIError {
	return &APIError{Status: http.StatusUnprocessableEntity, Code: CodeInvalidBodyContent, Message: msg}
}
