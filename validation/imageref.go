package validation

import (
	"fmt"
	"regexp"
	"strings"
)

// The grammar of an image reference, as Docker and containerd parse it
// (github.com/distribution/reference, grammar.go), written out here
// rather than imported for one check:
//
//	reference        := name [ ":" tag ] [ "@" digest ]
//	name             := [domain '/'] remote-name
//	domain           := host [':' port-number]
//	host             := domain-name | '[' IPv6address ']'
//	domain-name      := domain-component ['.' domain-component]*
//	domain-component := /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
//	remote-name      := path-component ['/' path-component]*
//	path-component   := alpha-numeric [separator alpha-numeric]*
//	alpha-numeric    := /[a-z0-9]+/
//	separator        := /[_.]|__|[-]+/
//	tag              := /[\w][\w.-]{0,127}/
//	digest           := algorithm ":" /[0-9a-fA-F]{32,}/
//	algorithm        := /[A-Za-z][A-Za-z0-9]*([-_+.][A-Za-z][A-Za-z0-9]*)*/
const (
	refAlphaNumeric    = `[a-z0-9]+`
	refSeparator       = `(?:[._]|__|[-]+)`
	refDomainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	refDomainName      = refDomainComponent + `(?:\.` + refDomainComponent + `)*`
	refIPv6            = `\[(?:[a-fA-F0-9:]+)\]`
	refDomain          = `(?:` + refDomainName + `|` + refIPv6 + `)(?::[0-9]+)?`
	refPathComponent   = refAlphaNumeric + `(?:` + refSeparator + refAlphaNumeric + `)*`
	refRemoteName      = refPathComponent + `(?:/` + refPathComponent + `)*`
	refName            = `(?:` + refDomain + `/)?` + refRemoteName
	refTag             = `[\w][\w.-]{0,127}`
	refDigest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
	// maxImageNameLen bounds the name part of a reference.
	maxImageNameLen = 255
	// maxImageRefLen bounds a whole reference: a name, a tag and a
	// sha512 digest fit well within it.
	maxImageRefLen = 512
)

// imageRefRE matches a whole image reference and captures its name.
var imageRefRE = regexp.MustCompile(`^(` + refName + `)(?::` + refTag + `)?(?:@` + refDigest + `)?$`)

// imageRefProblem says why ref is not an image reference Docker accepts,
// or returns "" when it is. like is an example for the message.
func imageRefProblem(ref, like string) string {
	bad := fmt.Sprintf("%q is not an image reference; write it like %s (lower-case repository, optional registry host, :tag and/or @sha256:digest)", ref, like)
	switch {
	case ref == "":
		return fmt.Sprintf("is empty; give an image reference like %s", like)
	case len(ref) > maxImageRefLen:
		return fmt.Sprintf("is %d characters long; an image reference has at most %d", len(ref), maxImageRefLen)
	case strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("%q contains white space or control characters; write it like %s", ref, like)
	}
	m := imageRefRE.FindStringSubmatch(ref)
	if m == nil {
		return bad
	}
	if len(m[1]) > maxImageNameLen {
		return fmt.Sprintf("repository name is %d characters long; use at most %d", len(m[1]), maxImageNameLen)
	}
	return ""
}
