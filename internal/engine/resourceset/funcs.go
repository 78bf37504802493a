package resourceset

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"time"

	sprig "github.com/go-task/slim-sprig/v3"
	"github.com/gosimple/slug"
	"sigs.k8s.io/yaml"
)

func init() {
	// Label values are at most 63 characters; cut at a word boundary.
	slug.MaxLength = 63
	slug.EnableSmartTruncate = true
}

// unavailable names the template functions that are refused because their
// output is not a function of their arguments, with what it depends on. A plan
// renders the templates and the apply renders them again: with any of these
// the objects would never match the plan. The list holds what slim-sprig's
// hermetic map still offers (randInt, ago) and what Masterminds' sprig or
// slim-sprig's full map offer, so that a template written for Helm gets this
// explanation rather than "not defined".
var unavailable = map[string]string{
	"randInt":                  "it is random",
	"randAlphaNum":             "it is random",
	"randAlpha":                "it is random",
	"randAscii":                "it is random",
	"randNumeric":              "it is random",
	"randBytes":                "it is random",
	"uuidv4":                   "it is random",
	"shuffle":                  "it is random",
	"genPrivateKey":            "it is random",
	"genCA":                    "it is random",
	"genCAWithKey":             "it is random",
	"genSelfSignedCert":        "it is random",
	"genSelfSignedCertWithKey": "it is random",
	"genSignedCert":            "it is random",
	"genSignedCertWithKey":     "it is random",
	"bcrypt":                   "it is salted at random",
	"htpasswd":                 "it is salted at random",
	"encryptAES":               "it is encrypted with a random IV",
	"now":                      "it depends on the current time",
	"ago":                      "it depends on the current time",
	"date":                     "it depends on the current time",
	"dateInZone":               "it depends on the current time",
	"date_in_zone":             "it depends on the current time",
	"htmlDate":                 "it depends on the current time",
	"htmlDateInZone":           "it depends on the current time",
	"env":                      "it depends on the provider's environment",
	"expandenv":                "it depends on the provider's environment",
	"getHostByName":            "it depends on the network",
}

// UnavailableFuncError is a template that calls a function whose output
// changes from one render to the next.
type UnavailableFuncError struct {
	// Name is the function.
	Name string
	// Location is the template position, "<template>:<line>:<column>", when
	// the error comes from the parse tree; the error of a call has none, as
	// text/template names the call.
	Location string
}

func (e *UnavailableFuncError) Error() string {
	msg := fmt.Sprintf("function %q is not available: %s, and the plan renders the templates again at apply, "+
		"so the objects would never match the plan", e.Name, unavailable[e.Name])
	if e.Location == "" {
		return msg
	}
	return "template: " + e.Location + ": " + msg
}

// deterministicFuncs is flux-operator's function set: slim-sprig's hermetic
// map plus slugify, toYaml and mustToYaml, and the bool its documentation once
// showed, with every function whose output is not a function of its arguments
// removed, and keys and values in key order.
var deterministicFuncs = func() template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	for name := range unavailable {
		delete(fm, name)
	}
	fm["keys"] = sortedKeys
	fm["values"] = valuesByKey
	fm["durationRound"] = durationRound
	fm["slugify"] = slug.Make
	fm["toYaml"] = toYAML
	fm["mustToYaml"] = mustToYAML
	fm["bool"] = toBool
	return fm
}()

// funcMap is deterministicFuncs, `inputs`, which returns the input being
// rendered, and the unavailable functions, defined so that a template calling
// one parses and checkFuncs can name it.
func funcMap(inputs func() any) template.FuncMap {
	fm := maps.Clone(deterministicFuncs)
	for name := range unavailable {
		fm[name] = unavailableFunc(name)
	}
	fm["inputs"] = inputs
	return fm
}

// unavailableFunc is what an unavailable function does if called: fail. The
// name must be defined for a template naming it to parse; checkFuncs then
// refuses every such template, so no render reaches the call.
func unavailableFunc(name string) func(...any) (any, error) {
	return func(...any) (any, error) {
		return nil, &UnavailableFuncError{Name: name}
	}
}

// checkFuncs refuses a parsed template, and the templates it defines, that
// names an unavailable function, even in a branch no input takes.
func checkFuncs(t *template.Template) error {
	tmpls := t.Templates()
	slices.SortFunc(tmpls, func(a, b *template.Template) int { return strings.Compare(a.Name(), b.Name()) })
	for _, tt := range tmpls {
		if tt.Tree == nil || tt.Root == nil {
			continue
		}
		if id := findUnavailable(tt.Root); id != nil {
			loc, _ := tt.ErrorContext(id)
			return &UnavailableFuncError{Name: id.Ident, Location: loc}
		}
	}
	return nil
}

// findUnavailable returns the first identifier under n that names an
// unavailable function.
func findUnavailable(n parse.Node) *parse.IdentifierNode {
	var found *parse.IdentifierNode
	walk(n, func(id *parse.IdentifierNode) bool {
		if _, ok := unavailable[id.Ident]; ok {
			found = id
		}
		return found == nil
	})
	return found
}

// walk calls visit on the identifiers under n, in order, until it returns
// false; walk returns false when it stopped.
func walk(n parse.Node, visit func(*parse.IdentifierNode) bool) bool {
	var children []parse.Node
	switch n := n.(type) {
	case *parse.IdentifierNode:
		return visit(n)
	case *parse.ListNode:
		children = n.Nodes
	case *parse.ActionNode:
		children = []parse.Node{n.Pipe}
	case *parse.PipeNode:
		for _, c := range n.Cmds {
			children = append(children, c)
		}
	case *parse.CommandNode:
		children = n.Args
	case *parse.ChainNode:
		children = []parse.Node{n.Node}
	case *parse.IfNode:
		children = branch(&n.BranchNode)
	case *parse.RangeNode:
		children = branch(&n.BranchNode)
	case *parse.WithNode:
		children = branch(&n.BranchNode)
	case *parse.TemplateNode:
		children = []parse.Node{n.Pipe}
	}
	for _, c := range children {
		if !isNil(c) && !walk(c, visit) {
			return false
		}
	}
	return true
}

func branch(b *parse.BranchNode) []parse.Node {
	return []parse.Node{b.Pipe, b.List, b.ElseList}
}

// isNil reports a typed nil node: an absent else branch or pipeline.
func isNil(n parse.Node) bool {
	if n == nil {
		return true
	}
	v := reflect.ValueOf(n)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// sortedKeys is sprig's keys with each dict's keys sorted: Go randomizes the
// order of a map, and a list rendered in a different order is a different
// object.
func sortedKeys(dicts ...map[string]any) []string {
	k := []string{}
	for _, dict := range dicts {
		k = append(k, slices.Sorted(maps.Keys(dict))...)
	}
	return k
}

// valuesByKey is sprig's values in the order of their keys.
func valuesByKey(dict map[string]any) []any {
	v := make([]any, 0, len(dict))
	for _, k := range slices.Sorted(maps.Keys(dict)) {
		v = append(v, dict[k])
	}
	return v
}

// NondeterministicArgError is a function called with an argument that makes
// its output change from one render to the next.
type NondeterministicArgError struct {
	Func   string
	Reason string
}

func (e *NondeterministicArgError) Error() string {
	return fmt.Sprintf("%s: %s, and the plan renders the templates again at apply", e.Func, e.Reason)
}

// durationRound is sprig's durationRound without its time.Time form, which is
// the time elapsed since then and so changes on every render.
func durationRound(d any) (string, error) {
	switch d.(type) {
	case time.Time, *time.Time:
		return "", &NondeterministicArgError{Func: "durationRound", Reason: "the time since a date depends on the current time"}
	}
	return sprigDurationRound(d), nil
}

var sprigDurationRound = sprig.GenericFuncMap()["durationRound"].(func(any) string)

// toYAML is flux-operator's toYaml: v as YAML with its trailing newline, or
// an empty string when v cannot be encoded.
func toYAML(v any) string {
	s, err := mustToYAML(v)
	if err != nil {
		return ""
	}
	return s
}

// mustToYAML is flux-operator's mustToYaml: v as YAML with its trailing
// newline, or the error.
func mustToYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// toBool converts a boolean, a string that strconv.ParseBool reads ("true",
// "false", "1", "0", "t", "F", "TRUE", ...; surrounding spaces ignored) or a
// number (non-zero is true) to a boolean. Anything else is an error: a typo
// must not read as false.
func toBool(v any) (bool, error) {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.String:
		b, err := strconv.ParseBool(strings.TrimSpace(rv.String()))
		if err != nil {
			return false, fmt.Errorf("bool: cannot read %q as a boolean (true, false, 1, 0, t, f)", rv.String())
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() != 0, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint() != 0, nil
	case reflect.Float32, reflect.Float64:
		return rv.Float() != 0, nil
	}
	return false, fmt.Errorf("bool: cannot convert %T to a boolean", v)
}
