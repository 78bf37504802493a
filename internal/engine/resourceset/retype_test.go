package resourceset

import (
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestRender_templateOnlyStringRetypedWarns: as in flux-operator, a string
// that is all template output is read as YAML after the render ("1.10"
// becomes the number 1.1, "NO" false); the render keeps that behaviour and
// names each such string, with the first input and how many more, and how
// to keep it a string. Output that reads back as written ("3" as 3, "true"
// as true: a templated replicas or flag), quoted output and mixed strings
// are no warning.
func TestRender_templateOnlyStringRetypedWarns(t *testing.T) {
	spec := &Spec{
		Name: "retype", Namespace: "default",
		Inputs: []map[string]any{
			{"id": "a", "version": "1.10", "flag": "yes", "replicas": 3},
			{"id": "b", "version": "v2", "flag": "NO", "replicas": "2"},
			{"id": "c", "version": "007", "flag": "true", "replicas": 1},
		},
		Resources: []map[string]any{{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cm-<< inputs.id >>", "annotations": map[string]any{"example.com/odd.key": "<< inputs.flag >>"}},
			"data": map[string]any{
				"version": "<< inputs.version >>",
				"quoted":  "<< inputs.version | quote >>",
				"mixed":   "v<< inputs.version >>",
			},
			"spec": map[string]any{"replicas": "<< inputs.replicas >>"},
		}},
	}
	objs, warnings, err := render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := objs[0].Object["data"].(map[string]any)["version"]; got != 1.1 {
		t.Errorf("data.version of the first input = %#v, want the number 1.1 as flux-operator renders it", got)
	}
	if got := objs[0].Object["data"].(map[string]any)["quoted"]; got != "1.10" {
		t.Errorf("data.quoted = %#v, want the string 1.10", got)
	}
	if len(warnings) != 2 {
		t.Fatalf("warnings = %+v, want data.version and the annotation", warnings)
	}
	for _, w := range warnings {
		if w.Path != "resources[0]" || w.Summary != "Template output is not a string" {
			t.Errorf("warning located at %q (%s), want resources[0]: %s", w.Path, w.Summary, w.Message)
		}
	}
	want := [][]string{
		{`resources[0].data.version: "<< inputs.version >>" renders to the number 1.1 with inputs[0] (and with 1 more inputs), not a string`,
			`write "<< inputs.version | quote >>"`},
		{`resources[0].metadata.annotations["example.com/odd.key"]: "<< inputs.flag >>" renders to the boolean true with inputs[0] (and with 1 more inputs)`,
			`write "<< inputs.flag | quote >>"`},
	}
	for _, parts := range want {
		found := false
		for _, w := range warnings {
			found = found || strings.Contains(w.Message, parts[0]) && strings.Contains(w.Message, parts[1])
		}
		if !found {
			t.Errorf("no warning contains %q and %q: %+v", parts[0], parts[1], warnings)
		}
	}
}

// TestEngine_planWarnsAboutIgnoredNamespacesAndDifferingDuplicates: a
// namespace on a cluster-scoped object is cleared and said; an object
// rendered twice with different content is applied as rendered first and
// said; a shared object that every input renders the same is no warning.
func TestEngine_planWarnsAboutIgnoredNamespacesAndDifferingDuplicates(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	spec := &Spec{
		Name: "warns", Namespace: "default",
		Inputs: []map[string]any{{"id": "a"}, {"id": "b"}},
		Resources: []map[string]any{
			{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "warns-ns", "namespace": "default"}},
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "warns-shared"}, "data": map[string]any{"same": "yes"}},
			{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "warns-first"}, "data": map[string]any{"first": "<< inputs.id >>"}},
		},
	}
	res, err := e.Plan(testenv.Context(t), spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range res.Warnings {
		got = append(got, w.Summary+": "+w.Message)
	}
	want := []string{
		`Namespace of a cluster-scoped object ignored: Namespace warns-ns names the namespace "default", but Namespace is cluster-scoped: the namespace is ignored`,
		`Object rendered more than once: ConfigMap/default/warns-first is rendered 1 more time(s) with different content: the first one rendered is applied`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings = %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
	if !strings.Contains(res.Manifests, "first: a") || strings.Contains(res.Manifests, "first: b") {
		t.Errorf("the first rendered object is not the one applied:\n%s", res.Manifests)
	}
}
