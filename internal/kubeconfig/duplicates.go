package kubeconfig

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

// checkKeys refuses a kubeconfig whose text could mean two things: a
// mapping that sets a key twice, or a YAML merge key (<<). The decoder
// keeps the last of two keys without a word, and matches JSON field names
// without regard to case (exec and Exec are one field), while kubectl, an
// editor or a reviewer may read the first: an exec plugin followed by
// `exec: null`, or a user hidden by a second `user:`, would pass the
// other checks and still be in the stored text that a download hands
// back. Merge keys are resolved differently by YAML libraries (and not at
// all by YAML 1.2), so they are refused too; kubectl never writes either.
// Every offending key is reported by its field path and line, never by
// its value (a key is named only when it is a kubeconfig field's name).
func checkKeys(c *collector, data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		c.add(root, describeDecodeError(err))
		return
	}
	walkKeys(c, &doc, root, fieldNames())
}

// walkKeys checks every mapping under n; path is n's field path, names
// the keys that may be shown.
func walkKeys(c *collector, n *yaml.Node, path string, names map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, child := range n.Content {
			walkKeys(c, child, path, names)
		}
	case yaml.SequenceNode:
		for i, child := range n.Content {
			walkKeys(c, child, fmt.Sprintf("%s[%d]", path, i), names)
		}
	case yaml.MappingNode:
		first := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			field := path + "." + keyName(k, names)
			switch {
			case k.Kind == yaml.ScalarNode && k.Tag == "!!merge":
				field = path + ".<<"
				c.add(field, fmt.Sprintf("is a YAML merge key (line %d), which is not allowed; write the fields out, as kubectl config view --raw --flatten does", k.Line))
				continue
			case k.Kind == yaml.ScalarNode:
				folded := foldKey(k.Value)
				if line, dup := first[folded]; dup {
					c.add(field, fmt.Sprintf("is set twice (lines %d and %d; field names are matched without regard to case): a kubeconfig names each field once, remove one", line, k.Line))
					continue
				}
				first[folded] = k.Line
			}
			walkKeys(c, v, field, names)
		}
	}
	// Scalars hold no keys; an alias is checked where its anchor is.
}

// keyName is k as a field path shows it: a kubeconfig field's name as it
// is spelled; any other key (it could be anything pasted, a token too) by
// its line.
func keyName(k *yaml.Node, names map[string]bool) string {
	if k.Kind == yaml.ScalarNode && names[foldKey(k.Value)] {
		return k.Value
	}
	return fmt.Sprintf("<key on line %d>", k.Line)
}

// fieldNames is the folded JSON name of every field of a kubeconfig
// (clientcmdv1.Config and the types under it).
func fieldNames() map[string]bool {
	names := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				names[foldKey(name)] = true
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[clientcmdv1.Config]())
	return names
}

// foldKey is the form in which encoding/json compares a key with a
// field's name: two keys with the same folded form set the same field.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, s)
}
