package resourceset

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestValidateInputsFrom_rejectsBadRefsAndStrategies(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
	for _, tc := range []struct {
		name     string
		refs     []InputsFrom
		strategy string
		want     string // "" for no error
		path     string // the attribute the error is about
	}{
		{"by name", []InputsFrom{{Name: "a"}}, "", "", ""},
		{"by selector, flatten", []InputsFrom{{APIVersion: InputProviderAPIVersion, Kind: InputProviderKind, Selector: sel}}, "Flatten", "", ""},
		{"both", []InputsFrom{{Name: "a"}, {Name: "b", Selector: sel}}, "", "inputs_from[1]: set either name or selector, not both", "inputs_from[1]"},
		{"neither", []InputsFrom{{Kind: InputProviderKind}}, "", "inputs_from[0]: set name or selector", "inputs_from[0]"},
		{"kind", []InputsFrom{{Kind: "ResourceSet", Name: "a"}}, "", `inputs_from[0].kind: must be "ResourceSetInputProvider", got "ResourceSet"`, "inputs_from[0].kind"},
		{"api version", []InputsFrom{{APIVersion: "fluxcd.controlplane.io/v1beta1", Name: "a"}}, "", `inputs_from[0].api_version: must be "fluxcd.controlplane.io/v1"`, "inputs_from[0].api_version"},
		{"bad selector", []InputsFrom{{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}, "",
			`inputs_from[0].selector: "Near" is not a valid label selector operator`, "inputs_from[0].selector"},
		{"permute", []InputsFrom{{Name: "a"}}, "Permute", "", ""},
		{"unknown strategy", nil, "Zip", `input_strategy.name: must be "Flatten" or "Permute", got "Zip"`, "input_strategy.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateInputsFrom(tc.refs, tc.strategy, false)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if got := fielderr.PathOf(err); got != tc.path {
				t.Fatalf("error on %q, want %q", got, tc.path)
			}
		})
	}
	// flux-operator's rule: includeEmptyProviders only with Permute.
	if err := ValidateInputsFrom(nil, "Permute", true); err != nil {
		t.Fatal(err)
	}
	err := ValidateInputsFrom(nil, "", true)
	if err == nil || fielderr.PathOf(err) != "input_strategy.include_empty_providers" || !strings.Contains(err.Error(), `applies only to name "Permute"`) {
		t.Fatalf("include_empty_providers with Flatten: %v", err)
	}
}

func TestProviderReadError_explainsNoKindAndNotFound(t *testing.T) {
	gvk := schema.FromAPIVersionAndKind(InputProviderAPIVersion, InputProviderKind)
	err := providerReadError(&meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{"v1"}}, "x")
	if !strings.Contains(err.Error(), "does not serve kind ResourceSetInputProvider (fluxcd.controlplane.io/v1)") {
		t.Fatal(err)
	}
	err = providerReadError(apierrors.NewNotFound(schema.GroupResource{Group: "fluxcd.controlplane.io", Resource: "resourcesetinputproviders"}, "p"), "ResourceSetInputProvider ns/p")
	if err.Error() != "ResourceSetInputProvider ns/p not found" {
		t.Fatal(err)
	}
}

func TestExportedInputs_addsProviderWithoutChangingTheObject(t *testing.T) {
	p := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "p", "namespace": "ns"},
		"status": map[string]any{"exportedInputs": []any{
			map[string]any{"id": "1", "provider": "overridden", "nested": map[string]any{"a": int64(1)}},
		}},
	}}
	got, err := ExportedInputs(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "1", "nested": map[string]any{"a": int64(1)}, "provider": map[string]any{
		"apiVersion": InputProviderAPIVersion, "kind": InputProviderKind, "name": "p", "namespace": "ns",
	}}
	if len(got) != 1 || !equalJSON(t, got[0], want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The object is not changed.
	if in := p.Object["status"].(map[string]any)["exportedInputs"].([]any)[0].(map[string]any); in["provider"] != "overridden" {
		t.Fatal("ExportedInputs changed the provider object")
	}
	none, err := ExportedInputs(&unstructured.Unstructured{Object: map[string]any{}})
	if err != nil || len(none) != 0 {
		t.Fatalf("no status: %v %v", none, err)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

func TestEngine_inputsFrom(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	testenv.InstallInputProviderCRD(t, c)
	ns := testenv.Namespace(t, c, "inputs-from")
	testenv.SetInputProvider(t, c, ns, "zeta", map[string]string{"app": "demo"}, map[string]any{"id": "z1", "tenant": "zeta"})
	testenv.SetInputProvider(t, c, ns, "alpha", map[string]string{"app": "demo"},
		map[string]any{"id": "a1", "tenant": "alpha"}, map[string]any{"id": "a2", "tenant": "alpha2"})
	testenv.SetInputProvider(t, c, ns, "other", nil, map[string]any{"id": "o1", "tenant": "other"})

	spec := &Spec{
		Name: "from", Namespace: ns,
		Inputs: []map[string]any{{"tenant": "literal"}},
		InputsFrom: []InputsFrom{
			{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "demo"}}},
			{APIVersion: InputProviderAPIVersion, Kind: InputProviderKind, Name: "alpha"}, // selected already: once
			{Name: "other"},
		},
		Resources: []map[string]any{mustMap(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-<< inputs.tenant >>
data:
  provider: << if hasKey inputs "provider" >><< inputs.provider.kind >>/<< inputs.provider.namespace >>/<< inputs.provider.name >><< else >>none<< end >>
`)},
	}
	resolved, err := e.ResolveInputs(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var tenants []string
	combined, err := resolved.combinedInputs()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range combined {
		tenants = append(tenants, in["tenant"].(string))
	}
	// The set's own inputs, then the providers' sorted by name.
	if got := strings.Join(tenants, " "); got != "literal alpha alpha2 other zeta" {
		t.Fatalf("inputs %q", got)
	}
	if len(spec.Inputs) != 1 || len(resolved.Inputs) != 1 {
		t.Fatal("ResolveInputs changed the set's own inputs")
	}

	plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ns + "_cm-alpha2__ConfigMap", ns + "_cm-alpha__ConfigMap", ns + "_cm-literal__ConfigMap", ns + "_cm-other__ConfigMap", ns + "_cm-zeta__ConfigMap"}
	if got := entryIDs(plan.Inventory); got != strings.Join(want, " ") {
		t.Fatalf("planned inventory\n %s\nwant\n %s", got, strings.Join(want, " "))
	}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifests != plan.Manifests {
		t.Fatal("apply must leave the planned manifests")
	}
	cm, ok := get(t, c, "v1", "ConfigMap", ns, "cm-zeta")
	if !ok {
		t.Fatal("cm-zeta not applied")
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "provider"); got != "ResourceSetInputProvider/"+ns+"/zeta" {
		t.Fatalf("provider key %q", got)
	}
	cm, _ = get(t, c, "v1", "ConfigMap", ns, "cm-literal")
	// A literal input names the set, as flux-operator names a ResourceSet.
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "provider"); got != "ResourceSet/"+ns+"/from" {
		t.Fatalf("literal input's provider key %q", got)
	}

	// A provider named but missing is an error naming the entry.
	missing := *spec
	missing.InputsFrom = append([]InputsFrom{{Name: "alpha"}}, InputsFrom{Name: "gone"})
	_, err = e.Plan(ctx, &missing, nil, PlanOptions{})
	if fielderr.PathOf(err) != "inputs_from[1]" || err.Error() != "resourceset "+ns+"/"+spec.Name+": inputs_from[1]: ResourceSetInputProvider "+ns+"/gone not found" {
		t.Fatalf("missing provider: %v", err)
	}

	// Providers that export nothing, and no inputs: no object, and the
	// apply prunes what the set applied.
	empty := *spec
	empty.Inputs = nil
	empty.InputsFrom = []InputsFrom{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "none"}}}}
	res, err = e.Apply(ctx, &empty, res.Inventory, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inventory) != 0 || res.Manifests != "" {
		t.Fatalf("no inputs: inventory %s, manifests %q", entryIDs(res.Inventory), res.Manifests)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "cm-zeta"); ok {
		t.Fatal("cm-zeta not pruned")
	}
}
