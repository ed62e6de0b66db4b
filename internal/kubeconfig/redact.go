package kubeconfig

import (
	"regexp"
	"strings"
)

// redacted replaces what RedactURL removes from a query.
const redacted = "redacted"

// urlInText finds URLs in free text. It stops at quotes and whitespace, so
// that Go's quoted URLs (Get "https://…": …) are found whole.
var urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'<>`]+")

// RedactURL returns s with the credentials a URL may carry removed: the
// userinfo (user:password@) is dropped, every query value but those of
// client-go's own parameters (timeout, limit, …) is replaced by
// "redacted", and the fragment is dropped. It does not need s to parse, so
// that a malformed URL is redacted too; a string without "://" is returned
// unchanged. When in doubt it removes more: an '@' anywhere before the
// query ends the part that is dropped.
func RedactURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	query := ""
	hasQuery := false
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query, hasQuery = rest[:i], rest[i+1:], true
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = rest[at+1:]
	}
	out := scheme + "://" + rest
	if hasQuery {
		out += "?" + redactQuery(query)
	}
	return out
}

// redactQuery keeps the parameter names of a query and hides the values,
// except those of the few parameters client-go itself adds, which say
// nothing secret and help to read an error (?timeout=32s).
func redactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == ';' })
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			parts[i] = redacted
		case !plainQueryKey(k):
			parts[i] = k + "=" + redacted
		}
	}
	return strings.Join(parts, "&")
}

// plainQueryKey reports whether a query parameter is one of client-go's
// own, whose value is never a secret.
func plainQueryKey(k string) bool {
	switch k {
	case "timeout", "limit", "watch", "resourceVersion", "continue", "labelSelector", "fieldSelector":
		return true
	}
	return false
}

// RedactText applies RedactURL to every URL in a message, such as an error
// from client-go that quotes the URL it requested, so that the message can
// be stored as a cluster's reason or logged.
func RedactText(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, RedactURL)
}
