package resourceset

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The preview of a changed set lists the objects it creates and, for those
// that exist, the fields the apply changes; it changes nothing.
func TestPreview_createsAndUpdates(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	name := uniqueName("preview")
	template := func(v string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
data:
  v: "` + v + `"
---
apiVersion: v1
kind: Secret
metadata:
  name: ` + name + `
stringData:
  password: "` + v + `"
`
	}
	spec := &Spec{Name: name, Namespace: "default", ResourcesTemplate: template("one")}
	p, err := e.Preview(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 2 || p.Changes[0].Type != "create" || p.Changes[1].Type != "create" || len(p.Warnings) != 0 {
		t.Fatalf("preview of a new set = %+v", p)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", "default", name); ok {
		t.Fatal("the preview created the ConfigMap")
	}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = e.Delete(ctx, spec, res.Inventory) })

	spec.ResourcesTemplate = template("two")
	p, err = e.Preview(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]kube.Drift{}
	for _, d := range p.Changes {
		byID[d.ID] = d
	}
	cm := byID["default_"+name+"__ConfigMap"]
	if cm.Type != "update" || len(cm.Changes) != 1 || cm.Changes[0].Path != "/data/v" || cm.Changes[0].From != `"one"` || cm.Changes[0].To != `"two"` {
		t.Errorf("ConfigMap change = %+v", cm)
	}
	sec := byID["default_"+name+"__Secret"]
	if sec.Type != "update" || len(sec.Changes) != 1 || strings.Contains(sec.Changes[0].From+sec.Changes[0].To, "dHdv") {
		t.Errorf("Secret change = %+v (data must be masked)", sec)
	}
	live, _ := get(t, c, "v1", "ConfigMap", "default", name)
	if v, _, _ := unstructured.NestedString(live.Object, "data", "v"); v != "one" {
		t.Errorf("the preview changed the ConfigMap: %q", v)
	}
}

// An object the API server refuses fails the preview, naming it; a namespace
// the set creates itself is no warning, one that nothing in the set creates
// is. (A kind neither the cluster nor the set defines fails rendering.)
func TestPreview_rejectsAndWarns(t *testing.T) {
	ctx := testenv.Context(t)
	e, _ := newEngine(t)
	name := uniqueName("preview-rej")
	_, err := e.Preview(ctx, &Spec{Name: name, Namespace: "default", ResourcesTemplate: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: -1
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: x}]}
`})
	var pe *PreviewError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "Deployment/default/"+name) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Fatalf("preview error = %v, want a PreviewError naming the Deployment", err)
	}
	if p := fielderr.PathOf(err); p != "resources_template" || strings.Contains(err.Error(), "drift detection") {
		t.Errorf("preview error %v on %q, want it on resources_template, without drift detection's wording", err, p)
	}

	// On the element of resources that renders the object, or of a step's.
	bad := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"replicas": -1, "selector": map[string]any{"matchLabels": map[string]any{"app": "x"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}}}}
	for _, tc := range []struct {
		spec Spec
		path string
	}{
		{Spec{Resources: []map[string]any{configMap(name + "-a"), bad}}, "resources[1]"},
		{Spec{Steps: []Step{{Name: "one", Resources: []map[string]any{configMap(name + "-a")}},
			{Name: "two", Resources: []map[string]any{configMap(name + "-b"), bad}}}}, "steps[1].resources[1]"},
	} {
		tc.spec.Name, tc.spec.Namespace = name, "default"
		_, err := e.Preview(ctx, &tc.spec)
		want := "resourceset default/" + name + ": " + tc.path + ": Deployment/default/" + name + ": the API server refuses it, so apply would fail: "
		if !errors.As(err, &pe) || fielderr.PathOf(err) != tc.path || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("preview error %v on %q, want it on %s: %q", err, fielderr.PathOf(err), tc.path, want)
		}
	}

	p, err := e.Preview(ctx, &Spec{Name: name, Namespace: "default", ResourcesTemplate: `apiVersion: v1
kind: Namespace
metadata:
  name: ` + name + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: in-own-namespace
  namespace: ` + name + `
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: elsewhere
  namespace: ` + name + `-later
`})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 3 {
		t.Errorf("changes = %+v, want 3 creates", p.Changes)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "ConfigMap/"+name+"-later/elsewhere: namespace "+name+"-later does not exist") {
		t.Errorf("warnings = %q", p.Warnings)
	}
}
