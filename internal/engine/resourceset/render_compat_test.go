package resourceset

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// TestRender_againstFluxOperator renders the cases where stevedore and
// flux-operator's builder (internal/builder/resourceset.go, with
// fluxcd/pkg/ssa's object readers) could differ: each either renders what
// flux-operator renders, or differs as the resource set's documentation
// says (the cases marked "differs").
func TestRender_againstFluxOperator(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: default\n"
	configMap := func(name string, more string) string {
		return strings.Replace(cm, "%s", name, 1) + more
	}
	disabled := "  annotations:\n    fluxcd.controlplane.io/reconcile: disabled\n"
	cases := []struct {
		name      string
		inputs    []map[string]any
		resources []string
		template  string
		// want lists the objects (Kind/namespace/name) in order, and data
		// the data of the first, a ConfigMap.
		want string
		data map[string]string
		// path and err, instead, are the attribute and a part of the error.
		path, err string
	}{
		{
			name:      "literal inputs name the set as their provider",
			inputs:    []map[string]any{{"tenant": "a"}},
			resources: []string{configMap("cm-<< inputs.tenant >>", "data:\n  p: << inputs.provider.apiVersion >>/<< inputs.provider.kind >>/<< inputs.provider.namespace >>/<< inputs.provider.name >>\n")},
			want:      "ConfigMap/default/cm-a",
			data:      map[string]string{"p": "fluxcd.controlplane.io/v1/ResourceSet/flux-system/apps"},
		},
		{
			name:      "a literal provider key is replaced",
			inputs:    []map[string]any{{"provider": "aws"}},
			resources: []string{configMap("cm", "data:\n  p: << inputs.provider.name >>\n")},
			want:      "ConfigMap/default/cm",
			data:      map[string]string{"p": "apps"},
		},
		{
			name:     "toYaml of an input holds its provider",
			inputs:   []map[string]any{{"a": 1}},
			template: configMap("cm", "data:\n  all: << toYaml inputs | quote >>\n"),
			want:     "ConfigMap/default/cm",
			data:     map[string]string{"all": "a: 1\nprovider:\n  apiVersion: fluxcd.controlplane.io/v1\n  kind: ResourceSet\n  name: apps\n  namespace: flux-system\n"},
		},
		{
			name:     "no inputs: inputs is null",
			template: configMap("cm", "data:\n  all: << toYaml inputs | quote >>\n  count: << len inputs | quote >>\n  has: << hasKey inputs \"provider\" | quote >>\n"),
			want:     "ConfigMap/default/cm",
			data:     map[string]string{"all": "null\n", "count": "0", "has": "false"},
		},
		{
			name:      "no inputs: a missing key is an error",
			resources: []string{configMap("cm-<< inputs.tenant >>", "")},
			path:      "resources[0]", err: `map has no entry for key "tenant"`,
		},
		{
			// differs: flux-operator keeps both copies and the disabled
			// object of resources when there are no inputs.
			name:      "no inputs: resources are deduplicated and disabled ones dropped (differs)",
			resources: []string{configMap("a", "data:\n  v: first\n"), configMap("a", "data:\n  v: second\n"), configMap("skipped", disabled)},
			want:      "ConfigMap/default/a",
			data:      map[string]string{"v": "first"},
		},
		{
			name:      "no inputs: resources_template is deduplicated against resources, disabled ones dropped",
			resources: []string{configMap("a", "data:\n  v: resources\n")},
			template:  configMap("a", "data:\n  v: template\n") + "---\n" + configMap("skipped", disabled) + "---\n" + configMap("b", ""),
			want:      "ConfigMap/default/a ConfigMap/default/b",
			data:      map[string]string{"v": "resources"},
		},
		{
			name:   "a List in resources_template is its items",
			inputs: []map[string]any{{"n": "1"}, {"n": "2"}},
			template: `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cm-<< inputs.n >>, namespace: default}, data: {num: "<< inputs.n >>"}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: shared, namespace: default}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: off-<< inputs.n >>, namespace: default, annotations: {fluxcd.controlplane.io/reconcile: disabled}}}
---
apiVersion: v1
kind: ConfigMapList
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: typed-<< inputs.n >>, namespace: default}}
`,
			want: "ConfigMap/default/cm-1 ConfigMap/default/shared ConfigMap/default/typed-1 ConfigMap/default/cm-2 ConfigMap/default/typed-2",
			data: map[string]string{"num": "1"},
		},
		{
			name:     "an empty List in resources_template is no object",
			template: "apiVersion: v1\nkind: List\nitems: []\n---\n" + configMap("a", ""),
			want:     "ConfigMap/default/a",
		},
		{
			// flux-operator's reader decodes each document into an
			// Unstructured, which fails on a document without a kind
			// ("Object 'Kind' is missing") before the reader looks for items.
			name:     "a document with items and no kind is an error on resources_template, naming the document",
			template: configMap("a", "") + "---\napiVersion: v1\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}\n",
			path:     "resources_template", err: "rendered document 1 (counting from 0) has items but no kind: flux-operator fails on it (Object 'Kind' is missing)",
		},
		{
			name:     "a bare items: [] is an error on resources_template",
			template: "items: []\n",
			path:     "resources_template", err: "rendered document 0 (counting from 0) has items but no kind",
		},
		{
			name:   "a document with items and no kind names the input",
			inputs: []map[string]any{{"n": "1"}, {"n": "2"}},
			template: configMap("cm-<< inputs.n >>", "") + "---\n" + configMap("x-<< inputs.n >>", "") +
				"---\n<<- if eq inputs.n \"2\" >>\nitems: []\n<<- else >>\napiVersion: v1\nkind: List\nitems: []\n<<- end >>\n",
			path: "resources_template", err: "with inputs[1]: rendered document 2 (counting from 0) has items but no kind",
		},
		{
			name:     "a document with items and any kind is its items",
			template: "apiVersion: v1\nkind: Anything\nmetadata: {name: l}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}}\n",
			want:     "ConfigMap/default/b",
		},
		{
			// differs: flux-operator passes the item on and the apply fails.
			name:     "a List item without a name is an error on resources_template (differs)",
			template: "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap}\n",
			path:     "resources_template", err: "rendered List, items[1]: rendered object ConfigMap/<no name> has no metadata.name",
		},
		{
			// flux-operator reads an entry of resources as one object; the
			// kind List is then refused as any kind the cluster does not
			// serve.
			name:      "a List in resources is one object",
			resources: []string{"apiVersion: v1\nkind: List\nmetadata: {name: l}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"},
			want:      "List//l",
		},
		{
			name: "a kustomize Kustomization in resources_template is left out",
			template: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\nresources: [a.yaml]\n---\n" +
				"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: kustomization\nmetadata: {name: lower}\n---\n" +
				"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux, namespace: default}\n",
			want: "Kustomization/default/flux",
		},
		{
			name:      "a kustomize Kustomization in resources is kept",
			resources: []string{"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\n"},
			want:      "Kustomization//k",
		},
		{
			// flux-operator fails too, on the missing kind ("Object 'Kind'
			// is missing"); it silently drops a document with a kind but
			// without apiVersion or name.
			name:     "a document of resources_template that is not an object is an error",
			template: configMap("a", "") + "---\nfoo: bar\n",
			path:     "resources_template", err: "rendered object <no kind>/<no name> has no apiVersion, kind, metadata.name",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: "apps", Namespace: "flux-system", Inputs: tc.inputs, ResourcesTemplate: tc.template}
			for _, r := range tc.resources {
				spec.Resources = append(spec.Resources, mustMap(t, r))
			}
			objs, err := Render(spec)
			if tc.err != "" {
				if err == nil || fielderr.PathOf(err) != tc.path || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v (on %q), want one on %s containing %q", err, fielderr.PathOf(err), tc.path, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(objs); got != tc.want {
				t.Fatalf("rendered\n %s\nwant\n %s", got, tc.want)
			}
			if tc.data != nil {
				data, _, err := unstructured.NestedStringMap(objs[0].Object, "data")
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.data {
					if data[k] != v {
						t.Errorf("data.%s = %q, want %q", k, data[k], v)
					}
				}
			}
		})
	}
}

func TestRender_literalInputsUnchanged(t *testing.T) {
	in := map[string]any{"provider": "aws"}
	spec := &Spec{Name: "apps", Namespace: "flux-system", Inputs: []map[string]any{in},
		Resources: []map[string]any{mustMap(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << inputs.provider.kind | lower >>\n")}}
	objs, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(objs); got != "ConfigMap//resourceset" {
		t.Fatalf("rendered %s", got)
	}
	if in["provider"] != "aws" {
		t.Fatal("the render changed the spec's input")
	}
}

func TestProviderKeyWarnings_nameTheInput(t *testing.T) {
	ws := providerKeyWarnings(&Spec{Name: "apps", Namespace: "flux-system", Inputs: []map[string]any{{"a": 1}, {"provider": "aws"}}})
	if len(ws) != 1 || ws[0].Path != "inputs[1]" || ws[0].Summary != "Input key replaced" ||
		!strings.Contains(ws[0].Message, `provider = { apiVersion = "fluxcd.controlplane.io/v1", kind = "ResourceSet", name = "apps", namespace = "flux-system" }`) {
		t.Fatalf("warnings = %+v", ws)
	}
}

func TestRender_warnsOfLeftOutKustomizations(t *testing.T) {
	spec := &Spec{Name: "apps", Namespace: "flux-system", Inputs: []map[string]any{{"n": "1"}, {"n": "2"}},
		ResourcesTemplate: "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata: {name: k}\n"}
	objs, ws, err := render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 0 {
		t.Fatalf("rendered %s", ids(objs))
	}
	if len(ws) != 1 || ws[0].Path != "resources_template" || ws[0].Summary != "Kustomize file left out" ||
		!strings.Contains(ws[0].Message, "resources_template renders Kustomization/k of kustomize.config.k8s.io") {
		t.Fatalf("warnings = %+v", ws)
	}
}

// providerSource is a ResourceSetInputProvider's inputs as ResolveInputs
// reads them (ExportedInputs), for tests that need no cluster.
func providerSource(t *testing.T, name string, inputs ...map[string]any) inputSource {
	t.Helper()
	list := make([]any, len(inputs))
	for i, in := range inputs {
		list[i] = in
	}
	p := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"exportedInputs": list}}}
	p.SetName(name)
	p.SetNamespace("flux-system")
	got, err := ExportedInputs(p)
	if err != nil {
		t.Fatal(err)
	}
	return inputSource{name: name, inputs: got}
}

// TestRender_permuteAgainstFluxOperator: the Permute strategy makes the
// input sets flux-operator's Permuter makes (internal/inputs, v0.58): the
// cartesian product of the set's inputs (first) and each provider's (sorted
// by name), the last source varying fastest, each source's input under its
// normalized name, and `id` the Adler-32 checksum, in decimal, of the
// sources' `<key>=<index>` joined by `/` (the ids below were computed
// outside Go, with Python's zlib.adler32). A source without inputs is
// skipped, unless include_empty_providers: then nothing renders.
func TestRender_permuteAgainstFluxOperator(t *testing.T) {
	const tmpl = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-<< inputs.id >>\n  namespace: default\n" +
		"data:\n  keys: << keys inputs | sortAlpha | join \",\" | quote >>\n  set: << dig \"apps\" \"tenant\" \"-\" inputs | quote >>\n" +
		"  setProvider: << dig \"apps\" \"provider\" \"kind\" \"-\" inputs | quote >>\n  git: << dig \"git_tag\" \"tag\" \"-\" inputs | quote >>\n" +
		"  gitProvider: << dig \"git_tag\" \"provider\" \"name\" \"-\" inputs | quote >>\n  oci: << dig \"oci_tag_v1\" \"digest\" \"-\" inputs | quote >>\n"
	git := func(t *testing.T) inputSource {
		return providerSource(t, "git-tag", map[string]any{"id": "g", "tag": "v1"})
	}
	oci := func(t *testing.T) inputSource {
		return providerSource(t, "OCI.tag v1", map[string]any{"id": "o1", "digest": "sha256:a"}, map[string]any{"id": "o2", "digest": "sha256:b"})
	}
	type cm struct{ name, keys, set, setProvider, git, gitProvider, oci string }
	cases := []struct {
		name         string
		inputs       []map[string]any
		providers    func(t *testing.T) []inputSource
		includeEmpty bool
		want         []cm
	}{{
		name:   "the set's inputs alone",
		inputs: []map[string]any{{"tenant": "a"}, {"tenant": "b"}},
		want: []cm{
			{"cm-138347042", "apps,id", "a", "ResourceSet", "-", "-", "-"},
			{"cm-138412579", "apps,id", "b", "ResourceSet", "-", "-", "-"},
		},
	}, {
		name:      "the set first, then the providers by name, the last fastest",
		inputs:    []map[string]any{{"tenant": "a"}, {"tenant": "b"}},
		providers: func(t *testing.T) []inputSource { return []inputSource{git(t), oci(t)} },
		want: []cm{
			{"cm-2604665365", "apps,git_tag,id,oci_tag_v1", "a", "ResourceSet", "v1", "git-tag", "sha256:a"},
			{"cm-2604730902", "apps,git_tag,id,oci_tag_v1", "a", "ResourceSet", "v1", "git-tag", "sha256:b"},
			{"cm-2606238230", "apps,git_tag,id,oci_tag_v1", "b", "ResourceSet", "v1", "git-tag", "sha256:a"},
			{"cm-2606303767", "apps,git_tag,id,oci_tag_v1", "b", "ResourceSet", "v1", "git-tag", "sha256:b"},
		},
	}, {
		name:      "a set without inputs and a provider that exports none are skipped",
		providers: func(t *testing.T) []inputSource { return []inputSource{git(t), providerSource(t, "empty"), oci(t)} },
		want: []cm{
			{"cm-1573914565", "git_tag,id,oci_tag_v1", "-", "-", "v1", "git-tag", "sha256:a"},
			{"cm-1573980102", "git_tag,id,oci_tag_v1", "-", "-", "v1", "git-tag", "sha256:b"},
		},
	}, {
		name:         "include_empty_providers: a provider that exports none empties the product",
		inputs:       []map[string]any{{"tenant": "a"}},
		providers:    func(t *testing.T) []inputSource { return []inputSource{git(t), providerSource(t, "empty")} },
		includeEmpty: true,
	}, {
		name:         "include_empty_providers: so does a set without inputs",
		providers:    func(t *testing.T) []inputSource { return []inputSource{git(t)} },
		includeEmpty: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: "apps", Namespace: "flux-system", Inputs: tc.inputs, ResourcesTemplate: tmpl,
				InputStrategy: InputStrategyPermute, IncludeEmptyProviders: tc.includeEmpty}
			if tc.providers != nil {
				spec.InputsFrom = []InputsFrom{{Name: "resolved in the test"}}
				spec.exported, spec.inputsResolved = tc.providers(t), true
			}
			objs, err := Render(spec)
			if err != nil {
				t.Fatal(err)
			}
			var got []cm
			for _, o := range objs {
				d, _, _ := unstructured.NestedStringMap(o.Object, "data")
				got = append(got, cm{o.GetName(), d["keys"], d["set"], d["setProvider"], d["git"], d["gitProvider"], d["oci"]})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("rendered\n %v\nwant\n %v", got, tc.want)
			}
		})
	}
}

// Without inputs and without inputs_from a Permute set renders everything
// once, as a Flatten one: flux-operator builds with no input sets.
func TestRender_permuteWithoutInputsRendersOnce(t *testing.T) {
	spec := &Spec{Name: "apps", Namespace: "flux-system", InputStrategy: InputStrategyPermute,
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\ndata:\n  all: << toYaml inputs | quote >>\n"}
	objs, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(objs); got != "ConfigMap/default/cm" {
		t.Fatalf("rendered %s", got)
	}
}

// More input sets than flux-operator allows (10000) fail on
// input_strategy.name, naming the source that crossed the limit; the same
// inputs under Flatten render.
func TestRender_permuteLimit(t *testing.T) {
	many := func(n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = map[string]any{"n": fmt.Sprint(i)}
		}
		return out
	}
	big := inputSource{name: "wide", inputs: many(101)}
	spec := &Spec{Name: "apps", Namespace: "flux-system", Inputs: many(100), InputStrategy: InputStrategyPermute,
		InputsFrom: []InputsFrom{{Name: "wide"}}, exported: []inputSource{big}, inputsResolved: true,
		Resources: []map[string]any{mustMap(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-<< inputs.apps.n >>-<< inputs.wide.n >>\n")}}
	_, err := Render(spec)
	if err == nil || fielderr.PathOf(err) != "input_strategy.name" ||
		!strings.Contains(err.Error(), "with the 101 inputs of wide the inputs would make 10100 permutations, more than the 10000 flux-operator allows") {
		t.Fatalf("error = %v (on %q)", err, fielderr.PathOf(err))
	}
	spec.exported = []inputSource{{name: "wide", inputs: many(100)}}
	objs, err := Render(spec)
	if err != nil || len(objs) != 10000 {
		t.Fatalf("10000 permutations: %d objects, %v", len(objs), err)
	}
}

func TestRender_unknownStrategy(t *testing.T) {
	spec := &Spec{Name: "apps", Namespace: "flux-system", InputStrategy: "permute",
		Resources: []map[string]any{mustMap(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")}}
	_, err := Render(spec)
	if err == nil || fielderr.PathOf(err) != "input_strategy.name" || !strings.Contains(err.Error(), `must be "Flatten" or "Permute", got "permute"`) {
		t.Fatalf("error = %v (on %q)", err, fielderr.PathOf(err))
	}
}

// PermuteKey normalizes as flux-operator's NormalizeKeyForTemplate does.
func TestPermuteKey(t *testing.T) {
	for in, want := range map[string]string{
		"apps": "apps", "git-tag": "git_tag", "OCI.tag v1": "oci_tag_v1", "a--b..c": "a_b_c", "-x-": "x",
		"Tenant_A": "tenant_a", "a+b$c": "abc", "a/b:c": "a_b_c", "__": "",
	} {
		if got := PermuteKey(in); got != want {
			t.Errorf("PermuteKey(%q) = %q, want %q", in, got, want)
		}
	}
}
