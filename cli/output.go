package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// Output formats of -o, as kubectl's.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
	outName  = "name"
)

// checkOutput refuses an unknown -o before anything is asked of the server.
func checkOutput(o string) error {
	switch o {
	case "", outTable, outWide, outJSON, outYAML, outName:
		return nil
	}
	return usageErrorf("output %q is not one of table, wide, json, yaml, name", o)
}

// object is one API resource as it came: its JSON decoded generically, so
// that -o json/yaml show every field the server sent, new ones included.
type object = map[string]any

// column is one column of a table: its header, how a cell is made from
// an object, and whether only -o wide shows it.
type column struct {
	header string
	cell   func(object) string
	wide   bool
}

// kind describes how a resource type is printed.
type kind struct {
	name    string // "cluster": -o name prints cluster/<name>
	columns []column
}

// printList prints objs in format o.
func printList(w io.Writer, o string, k kind, objs []object) error {
	switch o {
	case outJSON:
		return printJSON(w, objs)
	case outYAML:
		return printYAML(w, objs)
	case outName:
		for _, obj := range objs {
			name := str(obj["name"])
			if name == "" {
				name = str(obj["id"])
			}
			fmt.Fprintf(w, "%s/%s\n", k.name, printable(name))
		}
		return nil
	}
	return printTable(w, k, objs, o == outWide)
}

// printOne prints one object in format o.
func printOne(w io.Writer, o string, k kind, obj object) error {
	switch o {
	case outJSON:
		return printJSON(w, obj)
	case outYAML:
		return printYAML(w, obj)
	}
	return printList(w, o, k, []object{obj})
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printYAML(w io.Writer, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// printTable prints objs as aligned columns with a header.
func printTable(w io.Writer, k kind, objs []object, wide bool) error {
	if len(objs) == 0 {
		_, err := fmt.Fprintf(w, "No %ss found.\n", k.name)
		return err
	}
	return printRows(w, k, objs, wide, true)
}

// printChanges prints objects that changed while a list is watched: table
// rows without the header (it was printed with the list), one JSON or
// YAML document each, or their names.
func printChanges(w io.Writer, o string, k kind, objs []object) error {
	for _, obj := range objs {
		var err error
		switch o {
		case outJSON:
			err = printJSON(w, obj)
		case outYAML:
			if _, err = io.WriteString(w, "---\n"); err == nil {
				err = printYAML(w, obj)
			}
		case outName:
			err = printList(w, o, k, []object{obj})
		}
		if err != nil {
			return err
		}
	}
	if o == outTable || o == outWide {
		return printRows(w, k, objs, o == outWide, false)
	}
	return nil
}

// printRows prints objs as aligned columns, with the header or without.
func printRows(w io.Writer, k kind, objs []object, wide, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	var headers []string
	for _, c := range k.columns {
		if !c.wide || wide {
			headers = append(headers, c.header)
		}
	}
	if header {
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	for _, obj := range objs {
		var cells []string
		for _, c := range k.columns {
			if !c.wide || wide {
				cell := oneLine(printable(c.cell(obj)))
				if cell == "" {
					cell = "-"
				}
				cells = append(cells, cell)
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// oneLine keeps a table cell on one line and bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// str is v if it is a string, else "".
func str(v any) string {
	s, _ := v.(string)
	return s
}

// field walks obj by keys ("lastOperation", "type") and renders the value.
func field(obj object, keys ...string) string {
	var v any = obj
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, ",")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+fmt.Sprint(x[k]))
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// col is a column showing the field at keys.
func col(header string, keys ...string) column {
	return column{header: header, cell: func(o object) string { return field(o, keys...) }}
}

// wideCol is col for -o wide only.
func wideCol(header string, keys ...string) column {
	c := col(header, keys...)
	c.wide = true
	return c
}

// ageCol is the time since the RFC 3339 timestamp at keys, as kubectl's AGE.
func ageCol(header string, now func() time.Time, keys ...string) column {
	return column{header: header, cell: func(o object) string {
		t, err := time.Parse(time.RFC3339, field(o, keys...))
		if err != nil {
			return ""
		}
		return humanDuration(now().Sub(t))
	}}
}

// humanDuration is d as kubectl shows ages: 45s, 12m, 5h, 3d.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
