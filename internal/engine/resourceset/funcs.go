package resourceset

import (
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/gosimple/slug"
	"sigs.k8s.io/yaml"
)

func init() {
	// Label values are at most 63 characters; cut at a word boundary.
	slug.MaxLength = 63
	slug.EnableSmartTruncate = true
}

// funcMap is sprig's hermetic function map (no time, randomness or environment:
// the same inputs render the same bytes, or the plan would never settle) plus
// slugify and toYaml, as flux-operator offers them, and `inputs`, which returns
// the input being rendered.
func funcMap(inputs func() any) template.FuncMap {
	fm := sprig.HermeticTxtFuncMap()
	fm["slugify"] = slug.Make
	fm["toYaml"] = toYAML
	fm["inputs"] = inputs
	return fm
}

// toYAML encodes v as YAML without the trailing newline, so that it can be
// indented with nindent.
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}
