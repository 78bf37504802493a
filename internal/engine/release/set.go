package release

import (
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
