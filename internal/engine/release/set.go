package release

import (
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
)

// SetTypes are the `type`s of a set entry: how Helm's --set family parses its
// value. "" is "auto".
var SetTypes = []string{"auto", "string", "literal", "json"}

// SetValue is one entry of `set`, `set_sensitive` (Value and Type) or
// `set_list` (List): a value placed at a Helm --set path (`image.tag`,
// `ingress.annotations.kubernetes\.io/ingress\.class`, `servers[0].port`).
type SetValue struct {
	Name  string
	Value string
	// Type: "auto" or "" (helm --set: typed, `true`, `2`, `null`), "string"
	// (--set-string), "literal" (--set-literal: the whole value as one
	// string, commas and all), "json" (--set-json).
	Type string
	// List, when IsList, is a set_list value: a list of strings, set as
	// hashicorp/helm's set_list sets it (`name={a,b}`, typed as --set types).
	List   []string
	IsList bool
	// Path is the attribute an error about the entry is on (`set[0].name`,
	// `set[1].value` for a json value, `set_list[0].name`).
	Path string
	// Sensitive hides the value from errors (set_sensitive).
	Sensitive bool
}

// SetError is an entry of Spec.Sets that cannot be set into the values, on
// the entry's attribute.
type SetError struct {
	Entry SetValue
	Err   error
}

func (e *SetError) Error() string {
	detail := e.Err.Error()
	if e.Entry.Sensitive {
		// The parser's messages may quote the value.
		detail = "the value cannot be set at this path with this type (details hidden: the value is sensitive)"
	}
	return fmt.Sprintf("%s = %q: %s", e.Entry.Path, e.Entry.Name, detail)
}
func (e *SetError) Unwrap() error         { return e.Err }
func (e *SetError) AttributePath() string { return e.Entry.Path }
func (e *SetError) Summary() string       { return "Invalid set value" }

// InlineValues are values with sets set into them, in order, on a copy: the
// inline layer of the values (Spec.Values, then Spec.Sets), which
// composeValues merges over values_from. The values are nil when both are
// empty. The error joins a *SetError per entry that cannot be set; the
// other entries are set.
func InlineValues(values map[string]any, sets []SetValue) (map[string]any, error) {
	out := deepCopyValues(values)
	var errs []error
	for _, s := range sets {
		if out == nil {
			out = map[string]any{}
		}
		if err := SetInto(out, s); err != nil {
			errs = append(errs, &SetError{Entry: s, Err: err})
		}
	}
	return out, errors.Join(errs...)
}

// SetInto sets s into values with Helm's own parser, helm.sh/helm/v4/pkg/strvals,
// as `helm install --set` and hashicorp/helm's helm_release do. values must
// not be nil.
//
// Helm 4's parser sets nothing, without an error, for a path with an
// unclosed bracket (`a[x`, `a[0`, `[0]`): an entry that sets nothing is an
// error here, so that no entry of a configuration is lost without a word.
func SetInto(values map[string]any, s SetValue) error {
	probe := map[string]any{}
	if err := setInto(probe, s); err != nil {
		return err
	}
	if len(probe) == 0 {
		return fmt.Errorf("%q sets no value: check the path's brackets (a list index is written `name[0]`)", s.Name)
	}
	return setInto(values, s)
}

func setInto(values map[string]any, s SetValue) error {
	if s.IsList {
		return strvals.ParseInto(fmt.Sprintf("%s={%s}", s.Name, strings.Join(s.List, ",")), values)
	}
	line := s.Name + "=" + s.Value
	switch s.Type {
	case "", "auto":
		return strvals.ParseInto(line, values)
	case "string":
		return strvals.ParseIntoString(line, values)
	case "literal":
		return strvals.ParseLiteralInto(line, values)
	case "json":
		return strvals.ParseJSON(line, values)
	}
	return fmt.Errorf("unknown type %q: one of %s", s.Type, strings.Join(SetTypes, ", "))
}
