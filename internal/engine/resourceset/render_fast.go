package resourceset

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	yaml3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// A resource of `resources` is rendered as its YAML text (yaml.Marshal of
// the resource) executed as one template, and the output read back as YAML,
// as flux-operator renders it. Reading the output back was most of a render's
// time. fastTemplate renders the same object without reading any YAML per
// input, when the output is sure to read back as the source with some of its
// string values replaced:
//
//   - every `<<` of the text is in a string value (not a key) written on one
//     line as a plain scalar, so that each value is a template of its own,
//     whose output is the scalar's text in the rendered YAML;
//   - each such value parses alone as a template, with no trim marker at its
//     edges (which would trim the YAML around it), so that the text's
//     template is the values' templates with YAML text between them;
//   - with an input, each value renders without error to a plain word that
//     YAML reads as that string (plainValue), or to a decimal integer.
//
// Then the object is the source as YAML reads it (the skeleton, read once)
// with those values set. Anything else, for the whole template or for one
// input, renders the text and reads it back as before.
type fastTemplate struct {
	skeleton map[string]any
	slots    []fastSlot
}

// fastSlot is a templated string value of a resource, at path in the skeleton.
type fastSlot struct {
	path []any // string keys and int indices
	tmpl *template.Template
}

// newFastTemplate returns the fast template of src, the YAML of a resource
// that tmpl renders, or nil when the resource must be rendered as text. The
// values are parsed as templates associated with tmpl: they share its
// functions, options and defined templates.
func newFastTemplate(tmpl *template.Template, src string) *fastTemplate {
	raw, err := yaml.YAMLToJSON([]byte(src))
	if err != nil {
		return nil
	}
	var skeleton map[string]any
	if err := utiljson.Unmarshal(raw, &skeleton); err != nil || skeleton == nil {
		return nil
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal([]byte(src), &doc); err != nil || doc.Kind != yaml3.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	f := &fastTemplate{skeleton: skeleton}
	lines := strings.Split(src, "\n")
	actions := 0
	var walk func(n *yaml3.Node, path []any) bool
	walk = func(n *yaml3.Node, path []any) bool {
		switch n.Kind {
		case yaml3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml3.ScalarNode || strings.Contains(k.Value, "<<") {
					return false
				}
				if !walk(n.Content[i+1], append(path[:len(path):len(path)], k.Value)) {
					return false
				}
			}
			return true
		case yaml3.SequenceNode:
			for i, e := range n.Content {
				if !walk(e, append(path[:len(path):len(path)], i)) {
					return false
				}
			}
			return true
		case yaml3.ScalarNode:
			s := n.Value
			if !strings.Contains(s, "<<") {
				return true
			}
			if n.Style != 0 || strings.ContainsAny(s, "\r\n") || !restOfLine(lines, n.Line, n.Column, s) {
				return false
			}
			if strings.HasPrefix(s, "<<-") || strings.HasSuffix(s, "->>") {
				return false
			}
			if v, ok := lookup(skeleton, path); !ok || v != s {
				return false
			}
			t, err := tmpl.New(fmt.Sprintf("%s%s", tmpl.Name(), attributePath(path))).Parse(s)
			if err != nil {
				return false
			}
			actions += strings.Count(s, "<<")
			f.slots = append(f.slots, fastSlot{path: path, tmpl: t})
			return true
		}
		return false // an alias: yaml.Marshal writes none
	}
	if !walk(doc.Content[0], nil) || actions != strings.Count(src, "<<") {
		return nil
	}
	return f
}

// restOfLine is true when s is the text of line (1-based) from column
// (1-based, in characters) to its end: the scalar there is written whole on
// that line, not folded over several.
func restOfLine(lines []string, line, column int, s string) bool {
	if line < 1 || line > len(lines) || column < 1 {
		return false
	}
	l := lines[line-1]
	for range column - 1 {
		if l == "" {
			return false
		}
		_, size := utf8.DecodeRuneInString(l)
		l = l[size:]
	}
	return l == s
}

// render renders the object with input, or returns false when it must be
// rendered as text: a value failed to render (the text render names the
// error as it always has), rendered to something plainValue does not read,
// or the object is not one to apply.
func (f *fastTemplate) render(r *renderer, input map[string]any, buf *bytes.Buffer) (*unstructured.Unstructured, bool) {
	r.current = input
	obj := k8sruntime.DeepCopyJSON(f.skeleton)
	for _, s := range f.slots {
		buf.Reset()
		if err := s.tmpl.Execute(buf, nil); err != nil {
			return nil, false
		}
		v, ok := plainValue(buf.Bytes())
		if !ok {
			return nil, false
		}
		setPath(obj, s.path, v)
	}
	o := &unstructured.Unstructured{Object: obj}
	if checkObject(o) != nil {
		return nil, false
	}
	return o, true
}

// setPath sets the value at path, which lookup found in the skeleton.
func setPath(obj map[string]any, path []any, v any) {
	var cur any = obj
	for i, p := range path {
		last := i == len(path)-1
		switch p := p.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				m[p] = v
				return
			}
			cur = m[p]
		case int:
			l := cur.([]any)
			if last {
				l[p] = v
				return
			}
			cur = l[p]
		}
	}
}

// yamlWords are the plain words YAML (1.1, as the YAML reader reads them)
// reads as booleans or null.
var yamlWords = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"true": true, "True": true, "TRUE": true,
	"false": true, "False": true, "FALSE": true,
	"on": true, "On": true, "ON": true,
	"off": true, "Off": true, "OFF": true,
	"null": true, "Null": true, "NULL": true,
}

// plainValue is the value of b, a template's output written as a plain
// scalar value on its own line of block YAML, when it is sure: a word of
// ASCII letters, digits and `-_./:` that starts with a letter, does not end
// with `:` and is no boolean or null word, is that string; a decimal integer
// with no leading zero is an int64, as the JSON reader keeps it. Anything else
// (empty, spaces, quotes, floats, octal, booleans...) is not read here.
func plainValue(b []byte) (any, bool) {
	if len(b) == 0 || len(b) > 1024 {
		return nil, false
	}
	c := b[0]
	switch {
	case c >= '0' && c <= '9' || c == '-':
		digits := b
		if c == '-' {
			digits = b[1:]
		}
		if len(digits) == 0 || len(digits) > 18 || digits[0] == '0' && (len(digits) > 1 || c == '-') {
			return nil, false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return nil, false
			}
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		return n, err == nil
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for _, d := range b {
			switch {
			case d >= 'a' && d <= 'z', d >= 'A' && d <= 'Z', d >= '0' && d <= '9':
			case d == '-', d == '_', d == '.', d == '/', d == ':':
			default:
				return nil, false
			}
		}
		if b[len(b)-1] == ':' || yamlWords[string(b)] {
			return nil, false
		}
		return string(b), true
	}
	return nil, false
}
