package resourceset

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// A string of `resources` that is all template output ("<< inputs.version >>")
// is rendered into the YAML of its object, and YAML reads it as whatever it
// looks like: "1.10" becomes the number 1.1, "007" the number 7, "NO" false,
// "" null. flux-operator's builder does the same and stevedore keeps its
// behaviour, but says so at plan: retypedWarnings names each such string that
// rendered to a number, a boolean or null that does not read back as the
// text the template wrote. "3" that becomes 3, or "true" that becomes true,
// is what a user who templates `replicas` or a flag means, and is no warning.

// templatedScalar is a string of a resource, at path, that is all template.
type templatedScalar struct {
	path []any // string keys and int indices
	src  string
}

// templateOnly reports whether s is all template output: it starts with an
// action and ends with one.
func templateOnly(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "<<") && strings.HasSuffix(s, ">>")
}

// templatedScalars appends the template-only strings in v to out.
func templatedScalars(v any, at []any, out *[]templatedScalar) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			templatedScalars(e, append(at[:len(at):len(at)], k), out)
		}
	case []any:
		for i, e := range v {
			templatedScalars(e, append(at[:len(at):len(at)], i), out)
		}
	case string:
		if templateOnly(v) {
			*out = append(*out, templatedScalar{path: at, src: v})
		}
	}
}

// lookup returns the value at path in obj.
func lookup(obj map[string]any, path []any) (any, bool) {
	var v any = obj
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[p]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || p >= len(l) {
				return nil, false
			}
			v = l[p]
		}
	}
	return v, true
}

// spelled is how YAML writes the scalar v back.
func spelled(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// scalarKind names what a rendered value is when it is a scalar that is not a
// string, else "".
func scalarKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, int32, int64, float32, float64, json.Number:
		return "number"
	}
	return ""
}

var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// attributePath spells path as HCL would: .key, ["odd.key"], [0].
func attributePath(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case string:
			if plainKey.MatchString(p) {
				b.WriteString("." + p)
			} else {
				b.WriteString("[" + strconv.Quote(p) + "]")
			}
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		}
	}
	return b.String()
}

// retypedWarnings checks the rendered objects of each resource (results[i][j]
// is resources[i] rendered with inputs[j]) against the template-only strings
// of its source: one warning per string that rendered to a number, a boolean
// or null other than the text its template wrote (text renders one string
// with one input), naming the first input that did (inputIndex(j), -1 when
// the set has no inputs) and how many did.
func retypedWarnings(spec *Spec, results [][]rendered, inputs []map[string]any, inputIndex func(int) int,
	text func(src string, input map[string]any) (string, error)) []Warning {
	var out []Warning
	for i, res := range spec.Resources {
		var scalars []templatedScalar
		templatedScalars(map[string]any(res), nil, &scalars)
		for _, s := range scalars {
			first, count := "", 0
			for j, r := range results[i] {
				if r.err != nil || len(r.objs) != 1 {
					continue
				}
				v, ok := lookup(r.objs[0].Object, s.path)
				if !ok || scalarKind(v) == "" {
					continue
				}
				if out, err := text(s.src, inputs[j]); err == nil && strings.TrimSpace(out) == spelled(v) {
					continue
				}
				if count == 0 {
					rendered, _ := json.Marshal(v)
					first = fmt.Sprintf("the %s %s", scalarKind(v), rendered)
					if in := inputIndex(j); in >= 0 {
						first += fmt.Sprintf(" with inputs[%d]", in)
					}
				}
				count++
			}
			if count == 0 {
				continue
			}
			more := ""
			if count > 1 {
				more = fmt.Sprintf(" (and with %d more inputs)", count-1)
			}
			p := attributePath(s.path)
			out = append(out, Warning{Path: fielderr.Index("resources", i), Summary: "Template output is not a string", Message: fmt.Sprintf(
				"resources[%d]%s: %q renders to %s%s, not a string: a template's output is read as YAML, as flux-operator reads it "+
					"(1.10 becomes the number 1.1, 007 becomes 7, NO becomes false). To keep it a string, %s",
				i, p, s.src, first, more, quoteAdvice(s.src))})
		}
	}
	return out
}

// quoteAdvice says how to keep src a string: its one action piped to quote.
func quoteAdvice(src string) string {
	s := strings.TrimSpace(src)
	if strings.Count(s, "<<") != 1 {
		return `build it in one action piped to quote, e.g. "<< print inputs.a inputs.b | quote >>"`
	}
	return fmt.Sprintf("write %q", strings.TrimRight(strings.TrimSuffix(s, ">>"), " ")+" | quote >>")
}
