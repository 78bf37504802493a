package resourceset

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

func mustMap(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ids(objs []*unstructured.Unstructured) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return strings.Join(s, " ")
}

func TestRender_matrix(t *testing.T) {
	spec := &Spec{
		Name: "apps", Namespace: "flux-system",
		Inputs: []map[string]any{
			{"tenant": "team-a", "replicas": 2, "labels": map[string]any{"tier": "gold"}},
			{"tenant": "team-b", "replicas": 3, "labels": map[string]any{"tier": "silver"}},
		},
		Resources: []map[string]any{mustMap(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: << inputs.tenant >>-web
  namespace: << inputs.tenant >>
  labels:
    slug: << printf "%s Web App" inputs.tenant | slugify >>
spec:
  replicas: << inputs.replicas | int >>
  paused: << eq inputs.tenant "team-b" >>
`)},
		ResourcesTemplate: `
<<- range $k, $v := inputs.labels >>
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: << inputs.tenant >>-<< $k >>
  namespace: << inputs.tenant >>
data:
  value: << $v | quote >>
  all: << toYaml inputs.labels | quote >>
<<- end >>
<<- if eq inputs.tenant "team-a" >>
---
apiVersion: v1
kind: Namespace
metadata:
  name: << inputs.tenant >>
<<- end >>
`,
		CommonMetadata: CommonMetadata{Labels: map[string]string{"owner": "platform"}, Annotations: map[string]string{"note": "x"}},
	}
	objs, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := "Deployment/team-a/team-a-web Deployment/team-b/team-b-web ConfigMap/team-a/team-a-tier Namespace//team-a ConfigMap/team-b/team-b-tier"
	if got := ids(objs); got != want {
		t.Fatalf("rendered\n %s\nwant\n %s", got, want)
	}
	d := objs[1]
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
		t.Fatalf("replicas = %v (%T): a templated scalar must take its rendered type", d.Object["spec"].(map[string]any)["replicas"], d.Object["spec"].(map[string]any)["replicas"])
	}
	if p, _, _ := unstructured.NestedBool(d.Object, "spec", "paused"); !p {
		t.Fatal("paused must be the bool true")
	}
	if got := d.GetLabels()["slug"]; got != "team-b-web-app" {
		t.Fatalf("slugify = %q", got)
	}
	l := d.GetLabels()
	if l[NameLabel] != "apps" || l[NamespaceLabel] != "flux-system" || l["owner"] != "platform" || d.GetAnnotations()["note"] != "x" {
		t.Fatalf("metadata = %v %v", l, d.GetAnnotations())
	}
	if v, _, _ := unstructured.NestedString(objs[2].Object, "data", "all"); v != "tier: gold\n" {
		t.Fatalf("toYaml rendered %q, want flux-operator's %q (the trailing newline kept)", v, "tier: gold\n")
	}
}

func TestRender_dedupAndExclusion(t *testing.T) {
	cm := func(name, value string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\ndata:\n  v: " + value + "\n"
	}
	spec := &Spec{
		Name: "s", Namespace: "default",
		Inputs: []map[string]any{{"n": "1"}, {"n": "2"}},
		Resources: []map[string]any{
			mustMap(t, cm("shared", "from-resources-<< inputs.n >>")),
			mustMap(t, cm("only-<< inputs.n >>", "x")),
			mustMap(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: skipped-<< inputs.n >>
  namespace: default
  annotations:
    fluxcd.controlplane.io/reconcile: << if eq inputs.n "1" >>disabled<< else >>enabled<< end >>
`),
		},
		ResourcesTemplate: cm("shared", "from-template") + "---\n" + cm("tpl-<< inputs.n >>", "y") +
			"---\napiVersion: v1beta1\nkind: ConfigMap\nmetadata:\n  name: tpl-<< inputs.n >>\n  namespace: default\n",
	}
	objs, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := "ConfigMap/default/shared ConfigMap/default/only-1 ConfigMap/default/only-2 ConfigMap/default/skipped-2 ConfigMap/default/tpl-1 ConfigMap/default/tpl-2"
	if got := ids(objs); got != want {
		t.Fatalf("rendered\n %s\nwant\n %s", got, want)
	}
	if v, _, _ := unstructured.NestedString(objs[0].Object, "data", "v"); v != "from-resources-1" {
		t.Fatalf("shared came from %q: resources win over resources_template, the first input wins", v)
	}
}

func TestRender_noInputsRendersOnce(t *testing.T) {
	objs, err := Render(&Spec{Name: "s", Namespace: "ns", Resources: []map[string]any{mustMap(t, `
apiVersion: v1
kind: ServiceAccount
metadata:
  name: << inputs | len | printf "sa-%d" >>
`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(objs); got != "ServiceAccount//sa-0" {
		t.Fatalf("got %s", got)
	}
}

func TestRender_errorsNameTheSource(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		path string // the attribute the error is about
		want string
	}{
		{"unknown input key", Spec{Inputs: []map[string]any{{"a": 1}, {"b": 2}}, Resources: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x-<< inputs.a >>"}}}},
			"resources[0]", `resources[0]: with inputs[1]: template: resources[0]:4:13: executing "resources[0]" at <inputs>: map has no entry for key "a"`},
		{"syntax error", Spec{ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << .Foo \n"},
			"resources_template", `resources_template: template: resources_template:5: unclosed action started at resources_template:4`},
		{"non-deterministic function", Spec{ResourcesTemplate: "x: << now >>"},
			"resources_template", `resources_template: template: resources_template:1:6: function "now" is not available: it depends on the current time`},
		{"function flux-operator does not have", Spec{ResourcesTemplate: "x: << semverCompare \"1\" \"1\" >>"},
			"resources_template", `function "semverCompare" not defined`},
		{"invalid YAML", Spec{ResourcesTemplate: "apiVersion: v1\nkind: [\n"},
			"resources_template", "resources_template: rendered YAML is invalid"},
		{"object without a name", Spec{Resources: []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap"}}},
			"resources[0]", "resources[0]: rendered object ConfigMap/<no name> has no metadata.name"},
		{"object without kind", Spec{ResourcesTemplate: "apiVersion: v1\nmetadata:\n  name: a\n"},
			"resources_template", "resources_template: rendered object <no kind>/a has no kind"},
		{"two objects from one resource", Spec{Resources: []map[string]any{{"apiVersion": "v1", "kind": "List", "items": []any{}, "metadata": map[string]any{"name": "l"}}}},
			"", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "s", "ns"
			_, err := Render(&tc.spec)
			if tc.want == "" {
				return // only must not panic
			}
			if err == nil || fielderr.PathOf(err) != tc.path || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v (on %q), want one on %s containing %q", err, fielderr.PathOf(err), tc.path, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "resourceset ns/s: "+tc.path+": ") {
				t.Fatalf("error = %v, want it to name the set, then %s", err, tc.path)
			}
		})
	}
}

func TestManifests_masksSecrets(t *testing.T) {
	objs, err := Render(&Spec{Name: "s", Namespace: "ns", ResourcesTemplate: `
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
data: {token: aHVudGVyMg==}
`})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Manifests(objs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "aHVudGVyMg") || !strings.Contains(out, "password: '***'") {
		t.Fatalf("manifests leak or lose the secret keys:\n%s", out)
	}
	if v, _, _ := unstructured.NestedString(objs[0].Object, "stringData", "password"); v != "hunter2" {
		t.Fatal("masking must not touch the objects that are applied")
	}
}
