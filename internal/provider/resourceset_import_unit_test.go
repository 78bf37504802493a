package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// TestKeepNullDefaults: wait, timeout and force stay null in the plan when
// the state (an import) has them null and the configuration sets none; a
// value in the configuration or in the state plans as the schema does.
func TestKeepNullDefaults(t *testing.T) {
	defaults := resourceSetModel{Wait: types.BoolValue(false), Timeout: types.StringValue("5m"), Force: types.BoolValue(false)}
	nulls := resourceSetModel{Wait: types.BoolNull(), Timeout: types.StringNull(), Force: types.BoolNull()}
	set := resourceSetModel{Wait: types.BoolValue(true), Timeout: types.StringValue("1m"), Force: types.BoolValue(true)}
	for _, tc := range []struct {
		name             string
		state, cfg, plan resourceSetModel
		want             resourceSetModel
	}{
		{"imported, configuration sets none", nulls, nulls, defaults, nulls},
		{"imported, configuration sets them", nulls, set, set, set},
		{"applied before, configuration sets none", defaults, nulls, defaults, defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := tc.plan
			keepNullDefaults(&plan, &tc.state, &tc.cfg)
			if !plan.Wait.Equal(tc.want.Wait) || !plan.Timeout.Equal(tc.want.Timeout) || !plan.Force.Equal(tc.want.Force) {
				t.Errorf("plan wait %v timeout %v force %v, want %v %v %v", plan.Wait, plan.Timeout, plan.Force, tc.want.Wait, tc.want.Timeout, tc.want.Force)
			}
		})
	}
}

// TestFluxOperatorSetModel: the state written for a flux-operator ResourceSet
// reads back (specFrom, as the plan of the generated configuration reads it)
// as the set FluxOperatorSetOf made, every field; the defaults the
// ResourceSet leaves are null, not their values.
func TestFluxOperatorSetModel(t *testing.T) {
	rs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fluxcd.controlplane.io/v1", "kind": "ResourceSet",
		"metadata": map[string]any{"name": "tenants", "namespace": "flux-system",
			"annotations": map[string]any{"fluxcd.controlplane.io/reconcile": "disabled", "fluxcd.controlplane.io/reconcileTimeout": "90s"}},
		"spec": map[string]any{
			"commonMetadata": map[string]any{"labels": map[string]any{"team": "a"}},
			"inputs":         []any{map[string]any{"tenant": "a", "replicas": int64(2)}, map[string]any{"tenant": "b", "replicas": int64(3)}},
			"inputsFrom": []any{map[string]any{"kind": "ResourceSetInputProvider", "name": "prs"},
				map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"env": "prod"},
					"matchExpressions": []any{map[string]any{"key": "tier", "operator": "In", "values": []any{"a", "b"}}}}}},
			"inputStrategy": map[string]any{"name": "Permute"},
			"steps": []any{
				map[string]any{"name": "crds", "timeout": "30s", "resourcesTemplate": "apiVersion: v1\nkind: Namespace\nmetadata: {name: << inputs.tenant >>}\n"},
				map[string]any{"name": "apps", "resources": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "cm-<< inputs.tenant >>"}, "data": map[string]any{"n": "<< inputs.replicas >>"}}}},
			},
			"dependsOn": []any{map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "s", "namespace": "flux-system", "ready": true, "readyExpr": "type == 'Opaque'"},
				map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "x.example.com"}},
			"serviceAccountName": "deployer",
		},
	}}
	fo, err := resourceset.FluxOperatorSetOf(rs)
	if err != nil {
		t.Fatal(err)
	}
	m, err := fluxOperatorSetModel(fo)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Wait.IsNull() || !m.Force.IsNull() || m.Timeout.ValueString() != "1m30s" || !m.Resources.IsNull() || !m.ResourcesTemplate.IsNull() {
		t.Errorf("wait %v, force %v, timeout %v, resources %v, resources_template %v: want null, null, 1m30s, null, null",
			m.Wait, m.Force, m.Timeout, m.Resources, m.ResourcesTemplate)
	}
	got, known, diags := specFrom(context.Background(), &m)
	if diags.HasError() || !known {
		t.Fatalf("specFrom: known %t, %v", known, diags)
	}
	// Numbers of the configuration are read as JSON numbers: the inputs
	// compare as JSON.
	gotInputs, _ := json.Marshal(got.Inputs)
	wantInputs, _ := json.Marshal(fo.Spec.Inputs)
	if string(gotInputs) != string(wantInputs) {
		t.Errorf("inputs read as %s, want %s", gotInputs, wantInputs)
	}
	got.Inputs, fo.Spec.Inputs = nil, nil
	if !reflect.DeepEqual(got, fo.Spec) {
		t.Errorf("the imported state reads as\n%#v\nwant\n%#v", got, fo.Spec)
	}
}
