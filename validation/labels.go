package validation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zdnscloud/singlecloud/internal/model"
)

// maxLabelNameLen bounds the name part of a Kubernetes label key and a
// label value (Kubernetes' qualified-name rules).
const maxLabelNameLen = 63

// taintEffects lists the taint effects in the order messages name them.
func taintEffects() []string {
	return []string{model.TaintNoSchedule, model.TaintPreferNoSchedule, model.TaintNoExecute}
}

// validateLabels checks a node's labels: every key and value must be one
// Kubernetes accepts. Keys are checked in sorted order, so the report does
// not depend on map order; the field of each is field["key"].
func validateLabels(c *collector, field string, labels map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		f := fmt.Sprintf("%s[%q]", field, k)
		if p := labelKeyProblem(k); p != "" {
			c.addf(f, "%s", p)
		}
		if p := labelValueProblem(labels[k]); p != "" {
			c.addf(f, "%s", p)
		}
	}
}

// validateTaints checks a node's taints: key and value like a label's, a
// known effect, and no key with the same effect twice.
func validateTaints(c *collector, field string, taints []model.Taint) {
	type keyEffect struct{ key, effect string }
	seen := make(map[keyEffect]int, len(taints))
	for j, t := range taints {
		path := index(field, j)
		if p := labelKeyProblem(t.Key); p != "" {
			c.addf(path+".key", "%s", p)
		}
		if p := labelValueProblem(t.Value); p != "" {
			c.addf(path+".value", "%s", p)
		}
		switch {
		case t.Effect == "":
			c.addf(path+".effect", "is required: use %s", orList(taintEffects()))
		case !slices.Contains(taintEffects(), t.Effect):
			c.addf(path+".effect", "%q is not a taint effect; use %s", t.Effect, orList(taintEffects()))
		}
		ke := keyEffect{t.Key, t.Effect}
		if first, dup := seen[ke]; dup {
			c.addf(path, "repeats taints[%d] (key %q, effect %s); give each key and effect once", first, t.Key, t.Effect)
			continue
		}
		seen[ke] = j
	}
}

// labelKeyProblem says why k is not a Kubernetes label (or taint) key, or
// returns "" when it is: an optional DNS-1123 subdomain prefix and '/',
// then a name of 1–63 letters, digits, '-', '_' and '.', starting and
// ending with a letter or digit.
func labelKeyProblem(k string) string {
	const form = "a key is name or prefix/name, like zone or example.com/zone"
	if k == "" {
		return "key must not be empty; " + form
	}
	name := k
	if prefix, rest, hasPrefix := strings.Cut(k, "/"); hasPrefix {
		name = rest
		if prefix == "" {
			return fmt.Sprintf("key %q has an empty prefix before '/'; %s", k, form)
		}
		if strings.Contains(name, "/") {
			return fmt.Sprintf("key %q has more than one '/'; %s", k, form)
		}
		if p := subdomainProblem(prefix); p != "" {
			return fmt.Sprintf("key %q has a bad prefix: %s", k, p)
		}
	}
	if name == "" {
		return fmt.Sprintf("key %q has an empty name; %s", k, form)
	}
	if p := labelNameProblem(name); p != "" {
		if name == k {
			return "key " + p
		}
		return fmt.Sprintf("key %q: name %s", k, p)
	}
	return ""
}

// labelValueProblem says why v is not a Kubernetes label (or taint) value,
// or returns "" when it is: empty, or like the name part of a key.
func labelValueProblem(v string) string {
	if v == "" {
		return ""
	}
	if p := labelNameProblem(v); p != "" {
		return "value " + p
	}
	return ""
}

// labelNameProblem says why s is not a qualified name (the name part of a
// label key, or a label value), or returns "" when it is.
func labelNameProblem(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > maxLabelNameLen {
		return fmt.Sprintf("%q is %d characters long; use at most %d", s, len(s), maxLabelNameLen)
	}
	for _, r := range s {
		if !isAlnum(r) && r != '-' && r != '_' && r != '.' {
			return fmt.Sprintf("%q may contain only letters, digits, '-', '_' and '.'", s)
		}
	}
	if !isAlnum(rune(s[0])) || !isAlnum(rune(s[len(s)-1])) {
		return fmt.Sprintf("%q must start and end with a letter or digit", s)
	}
	return ""
}

func isAlnum(r rune) bool {
	return isLowerAlnum(r) || (r >= 'A' && r <= 'Z')
}

// orList renders words for a message: "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
