package resourceset

import (
	"errors"
	"slices"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A plan dry-runs the apply only when asked, and only when the set changes:
// not when the caller says it is as in state, nor when objects are
// undecided (a missing service account here).
func TestEngine_planPreviewsWhenTheSetChanges(t *testing.T) {
	ctx := testenv.Context(t)
	e, _ := newEngine(t)
	name := uniqueName("plan-preview")
	spec := &Spec{Name: name, Namespace: "default",
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata: {a: b}\n"}
	id := "default_" + name + "__ConfigMap"

	res, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Preview != nil {
		t.Fatalf("a plan not asked for a preview made one: %+v", res.Preview)
	}

	res, err = e.Plan(ctx, spec, nil, PlanOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Preview == nil || len(res.Preview.Changes) != 1 || res.Preview.Changes[0].ID != id || res.Preview.Changes[0].Type != "create" {
		t.Fatalf("preview %+v, want the ConfigMap created", res.Preview)
	}

	var seen *Result
	res, err = e.Plan(ctx, spec, nil, PlanOptions{Preview: true, Unchanged: func(r *Result) bool { seen = r; return true }})
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Manifests == "" || entryIDs(seen.Inventory) != id {
		t.Fatalf("Unchanged was given %+v, want the planned inventory and manifests", seen)
	}
	if res.Preview != nil {
		t.Fatalf("an unchanged set was previewed: %+v", res.Preview)
	}

	nosa := *spec
	nosa.ServiceAccountName = name + "-nobody"
	res, err = e.Plan(ctx, &nosa, nil, PlanOptions{Preview: true, Unchanged: func(*Result) bool { t.Error("Unchanged asked with objects undecided"); return false }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Undecided[id] || res.Preview != nil {
		t.Fatalf("undecided %v, preview %+v: want the ConfigMap undecided and no preview", res.Undecided, res.Preview)
	}
}

// An apply whose providers exported other inputs since the plan applies
// nothing and returns a *StalePlanError on inputs_from; given the digest of a
// plan of the current inputs, it applies.
func TestEngine_applyRefusesInputsChangedSincePlan(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	testenv.InstallInputProviderCRD(t, c)
	ns := testenv.Namespace(t, c, "stale-inputs")
	testenv.SetInputProvider(t, c, ns, "p", nil, map[string]any{"tenant": "a"})
	spec := &Spec{Name: "rs", Namespace: ns, InputsFrom: []InputsFrom{{Name: "p"}},
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-<< inputs.tenant >>\n"}

	plan, err := e.Plan(ctx, spec, nil, PlanOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	testenv.SetInputProvider(t, c, ns, "p", nil, map[string]any{"tenant": "b"})
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{PlannedDigest: Digest(plan.Manifests)})
	var stale *StalePlanError
	if !errors.As(err, &stale) || !stale.Inputs || fielderr.PathOf(err) != "inputs_from" {
		t.Fatalf("apply: %v, want a *StalePlanError on inputs_from", err)
	}
	if len(res.Inventory) != 0 {
		t.Fatalf("inventory %s after an apply that applied nothing", entryIDs(res.Inventory))
	}
	for _, cm := range []string{"cm-a", "cm-b"} {
		if _, ok := get(t, c, "v1", "ConfigMap", ns, cm); ok {
			t.Fatalf("%s applied by an apply whose inputs changed since the plan", cm)
		}
	}

	plan, err = e.Plan(ctx, spec, nil, PlanOptions{Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err = e.Apply(ctx, spec, nil, ApplyOptions{PlannedDigest: Digest(plan.Manifests)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifests != plan.Manifests {
		t.Fatal("apply must leave the planned manifests")
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "cm-b"); !ok {
		t.Fatal("cm-b not applied")
	}
}

// Only an object that the plan's look-up found missing (new to the
// inventory, not existing, decided) and that the dry run updates appeared
// while the plan ran.
func TestAppearedSincePlan(t *testing.T) {
	res := &Result{
		Inventory: []kube.Entry{{ID: "kept"}, {ID: "existing"}, {ID: "undecided"}, {ID: "appeared"}, {ID: "created"}},
		Existing:  map[string]bool{"existing": true},
		Undecided: map[string]bool{"undecided": true},
	}
	changes := []kube.Drift{{ID: "kept", Type: "update"}, {ID: "existing", Type: "update"}, {ID: "undecided", Type: "update"},
		{ID: "appeared", Type: "update"}, {ID: "created", Type: "create"}}
	got := appearedSincePlan(res, []kube.Entry{{ID: "kept"}}, changes)
	if !slices.Equal(got, []string{"appeared"}) {
		t.Fatalf("appeared %q, want [appeared]", got)
	}
}
