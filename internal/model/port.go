package model

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
)

// Port is a TCP port number. singlecloud's original API carried sshPort as
// a string ("22") and its clients still send it so, while newer clients
// send a number: Port accepts both, and is always written back as a JSON
// number. Range checks are validation's job; Port only insists on an
// integer.
type Port int

// portType is reported in decoding errors, so the server can say "a port
// number" rather than "a number".
var portType = reflect.TypeFor[Port]()

// UnmarshalJSON accepts an integer (22) or a string of decimal digits
// ("22", surrounding white space ignored); null leaves p as it is, as for
// any JSON field. Anything else, including numbers too large for an int, is
// a *json.UnmarshalTypeError naming the value's JSON kind.
func (p *Port) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	text, kind := string(b), "number"
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &json.UnmarshalTypeError{Value: "string", Type: portType}
		}
		text, kind = string(bytes.TrimSpace([]byte(s))), "string"
	} else if len(b) > 0 && b[0] != '-' && (b[0] < '0' || b[0] > '9') {
		return &json.UnmarshalTypeError{Value: jsonKindOf(b), Type: portType}
	}
	n, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return &json.UnmarshalTypeError{Value: kind + " " + strconv.Quote(clip(text, 32)), Type: portType}
	}
	*p = Port(n)
	return nil
}

// jsonKindOf names the kind of a JSON value by its first byte.
func jsonKindOf(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "value"
}

// clip shortens s to at most n bytes, so an error never echoes a huge
// input.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
