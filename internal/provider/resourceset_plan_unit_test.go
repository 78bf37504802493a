package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// TestPlannedSet covers every branch of the translation of the engine's plan
// of a set into the planned model and the plan's warnings.
func TestPlannedSet(t *testing.T) {
	const manifests = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	inventory := []kube.Entry{{ID: "ns_a__ConfigMap", V: "v1"}}
	changes := []kube.Drift{{ID: "ns_a__ConfigMap", Type: "create"}}
	planned := func() resourceSetModel {
		return resourceSetModel{ID: types.StringValue("ns/set"), Wait: types.BoolValue(false), Timeout: types.StringValue("5m"),
			TakeOverFrom: types.ListNull(types.StringType), InputsFrom: types.ListValueMust(inputsFromElemType(), nil),
			Drift: emptyDrift(), Inventory: types.ListUnknown(inventoryEntryType), Manifests: types.StringUnknown(),
			Conditions: types.ListUnknown(conditionType), Changes: types.ListUnknown(driftEntryType)}
	}
	stateConditions := conditionsValue([]kube.Condition{{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded", Message: "Applied 1 objects"}})
	state := func() *resourceSetModel {
		s := planned()
		s.Inventory, s.Manifests = inventoryValue(inventory, nil), types.StringValue(manifests)
		s.Conditions, s.Changes = stateConditions, types.ListNull(driftEntryType)
		return &s
	}
	result := func(pv *resourceset.Preview) *resourceset.Result {
		return &resourceset.Result{Inventory: inventory, Manifests: manifests, Preview: pv}
	}
	type warning struct {
		summary string
		at      path.Path // empty: on the resource
	}
	for _, tc := range []struct {
		name       string
		res        *resourceset.Result
		state      *resourceSetModel
		warnings   []warning
		conditions types.List
		changes    types.List
		inventory  types.List
	}{{
		name:       "create: the preview's changes",
		res:        result(&resourceset.Preview{Changes: changes}),
		conditions: types.ListUnknown(conditionType), changes: driftValue(changes), inventory: inventoryValue(inventory, nil),
	}, {
		name: "the render's warnings, on their attributes",
		res: func() *resourceset.Result {
			r := result(&resourceset.Preview{Changes: changes})
			r.Warnings = []resourceset.Warning{{Path: "resources[0]", Summary: "Namespace ignored", Message: "a cluster-scoped object"},
				{Summary: "Objects taken over", Message: "take_over_from"}}
			return r
		}(),
		warnings:   []warning{{"Namespace ignored", path.Root("resources").AtListIndex(0)}, {"Objects taken over", path.Empty()}},
		conditions: types.ListUnknown(conditionType), changes: driftValue(changes), inventory: inventoryValue(inventory, nil),
	}, {
		name:       "unchanged: the state's conditions and changes",
		res:        result(nil),
		state:      state(),
		conditions: stateConditions, changes: types.ListNull(driftEntryType), inventory: inventoryValue(inventory, nil),
	}, {
		name: "drift to plan away: the preview's changes",
		res:  result(&resourceset.Preview{Changes: []kube.Drift{{ID: "ns_a__ConfigMap", Type: "update"}}}),
		state: func() *resourceSetModel {
			s := state()
			s.Drift = driftValue([]kube.Drift{{ID: "ns_a__ConfigMap", Type: "update"}})
			return s
		}(),
		conditions: types.ListUnknown(conditionType), changes: driftValue([]kube.Drift{{ID: "ns_a__ConfigMap", Type: "update"}}),
		inventory: inventoryValue(inventory, nil),
	}, {
		name:       "a setting changed: not unchanged",
		res:        result(&resourceset.Preview{}),
		state:      func() *resourceSetModel { s := state(); s.Wait = types.BoolValue(true); return s }(),
		conditions: types.ListUnknown(conditionType), changes: driftValue(nil), inventory: inventoryValue(inventory, nil),
	}, {
		name: "undecided objects: changes unknown, adopted unknown",
		res: func() *resourceset.Result {
			r := result(nil)
			r.Undecided = map[string]bool{"ns_a__ConfigMap": true}
			return r
		}(),
		state:      state(),
		conditions: types.ListUnknown(conditionType), changes: types.ListUnknown(driftEntryType),
		inventory: plannedInventoryValue(inventory, map[string]bool{"ns_a__ConfigMap": true}, nil),
	}, {
		name:       "the dry runs could not tell: changes unknown, the preview's warnings",
		res:        result(&resourceset.Preview{Unknown: "service account missing", Warnings: []string{"namespace other does not exist yet"}}),
		warnings:   []warning{{"Apply may fail", path.Empty()}},
		conditions: types.ListUnknown(conditionType), changes: types.ListUnknown(driftEntryType), inventory: inventoryValue(inventory, nil),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, diags := plannedSet(tc.res, planned(), tc.state)
			if diags.HasError() {
				t.Fatalf("errors: %v", diags)
			}
			var gotWarnings []warning
			for _, d := range diags.Warnings() {
				at := path.Empty()
				if wp, ok := d.(diag.DiagnosticWithPath); ok {
					at = wp.Path()
				}
				gotWarnings = append(gotWarnings, warning{d.Summary(), at})
				if !strings.HasPrefix(d.Detail(), resourceset.Kind+" ns/set: ") {
					t.Errorf("warning %q does not name the set: %s", d.Summary(), d.Detail())
				}
			}
			if len(gotWarnings) != len(tc.warnings) {
				t.Fatalf("warnings %v, want %v", gotWarnings, tc.warnings)
			}
			for i := range gotWarnings {
				if gotWarnings[i].summary != tc.warnings[i].summary || !gotWarnings[i].at.Equal(tc.warnings[i].at) {
					t.Errorf("warning %d: %v, want %v", i, gotWarnings[i], tc.warnings[i])
				}
			}
			if !got.Manifests.Equal(types.StringValue(manifests)) {
				t.Errorf("manifests %s", got.Manifests)
			}
			for _, c := range []struct {
				name      string
				got, want types.List
			}{{"inventory", got.Inventory, tc.inventory}, {"conditions", got.Conditions, tc.conditions}, {"changes", got.Changes, tc.changes}} {
				if !c.got.Equal(c.want) {
					t.Errorf("%s = %s, want %s", c.name, c.got, c.want)
				}
			}
		})
	}
}
