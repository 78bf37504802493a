package resourceset

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzRender_neverPanicsAndLabelsEveryObject renders arbitrary templates with
// arbitrary inputs: it may fail, never panic, and what it renders always
// carries the owner labels.
func FuzzRender_neverPanicsAndLabelsEveryObject(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.name >>\n", `[{"name": "a"}, {"name": "b"}]`)
	f.Add("<< range $i, $v := inputs.list >>\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s<< $i >>}\n<< end >>", `[{"list": [1, 2]}]`)
	f.Add("<< toYaml inputs | indent 2 >>", `[{"x": {"y": [true, null, 1.5]}}]`)
	f.Add("apiVersion: v1\nkind: List\nitems: << inputs.items >>\nmetadata: {name: l}", `[{"items": "<<"}]`)
	f.Add("<< slugify inputs.s | upper >>: << inputs.n | int >>", `[{"s": "Hello World", "n": 3}]`)
	f.Fuzz(func(t *testing.T, tmpl, inputsJSON string) {
		var inputs []map[string]any
		if err := yaml.Unmarshal([]byte(inputsJSON), &inputs); err != nil {
			return
		}
		spec := &Spec{Name: "fuzz", Namespace: "ns", Inputs: inputs, ResourcesTemplate: tmpl}
		objs, err := Render(spec)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetLabels()[NameLabel] != "fuzz" || o.GetName() == "" || o.GetKind() == "" {
				t.Fatalf("rendered object without identity or owner labels: %v", o.Object)
			}
		}
		if _, err := Manifests(objs); err != nil {
			t.Fatalf("rendered objects do not serialize: %v", err)
		}
	})
}
