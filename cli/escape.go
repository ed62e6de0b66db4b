package cli

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns s, a string the server (or a cluster through it) sent,
// safe to write to a terminal: every character a terminal would act on
// rather than show — C0 controls (ESC starting a colour or a cursor move,
// \r overwriting the line), DEL, C1 controls (U+009B is CSI on some
// terminals), the bidirectional overrides that reorder what is shown —
// and every byte that is not UTF-8 is escaped as strconv.Quote writes it
// (\x1b, \r, \u009b, \xff). Line breaks and tabs are kept: a table cell
// goes through oneLine after, which folds them into spaces. Printable
// Unicode (names in any script) is kept as it is.
//
// It is applied where the CLI prints what it did not write itself: table
// cells, -o name, error messages, log and event lines, status words. JSON
// and YAML output needs nothing: their encoders escape control characters.
func printable(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r) {
			q := strconv.Quote(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether r is one that printable escapes.
// utf8.RuneError stands for a byte that is not UTF-8 (a real U+FFFD is
// escaped too, harmlessly).
func needsEscape(r rune) bool {
	switch {
	case r == '\n', r == '\t':
		return false
	case r == utf8.RuneError, unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
		return true
	}
	return false
}
