package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// diagLines is each error of diags as "<attribute path>: <detail>", the path
// "-" for a diagnostic on the resource.
func diagLines(diags diag.Diagnostics) []string {
	var out []string
	for _, d := range diags.Errors() {
		p := "-"
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			p = wp.Path().String()
		}
		out = append(out, p+": "+d.Detail())
	}
	return out
}

func checkDiagLines(t *testing.T, diags diag.Diagnostics, want []string) {
	t.Helper()
	got := diagLines(diags)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestAttributePath_resourceSet(t *testing.T) {
	for field, want := range map[string]path.Path{
		"resources[2]":                path.Root("resources").AtListIndex(2),
		"steps[1].resources[0]":       path.Root("steps").AtListIndex(1).AtName("resources").AtListIndex(0),
		"steps[1].resources_template": path.Root("steps").AtListIndex(1).AtName("resources_template"),
		"inputs_from[0].api_version":  path.Root("inputs_from").AtListIndex(0).AtName("api_version"),
		"input_strategy":              path.Root("input_strategy"),
		"steps[0].Timeout":            path.Root("steps").AtListIndex(0), // not an attribute name: the step
		"dependencies[0].ready_expr":  path.Root("dependencies").AtListIndex(0).AtName("ready_expr"),
		"common_metadata.labels":      path.Root("common_metadata").AtName("labels"),
		"inputs_from[10].selector":    path.Root("inputs_from").AtListIndex(10).AtName("selector"),
	} {
		if got := attributePath(field); !got.Equal(want) {
			t.Errorf("attributePath(%q) = %s, want %s", field, got, want)
		}
	}
}

// The resource set engine's errors are diagnostics on the attribute they are
// about, one per error joined, each naming the set once.
func TestAddError_resourceSetEngineErrors(t *testing.T) {
	ctx := context.Background()
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name}}
	}
	// The errors below are found before the engine reads the cluster.
	e := resourceset.New(nil)
	for _, tc := range []struct {
		name string
		spec resourceset.Spec
		want []string
	}{
		{"resource", resourceset.Spec{Inputs: []map[string]any{{"a": 1}, {"b": 2}}, Resources: []map[string]any{cm("x"), cm("x-<< inputs.a >>")}}, []string{
			`resources[1]: resourceset ns/s: resources[1]: with inputs[1]: template: resources[1]:4:13: executing "resources[1]" at <inputs>: map has no entry for key "a"`,
		}},
		{"template", resourceset.Spec{ResourcesTemplate: "<< .x"}, []string{
			`resources_template: resourceset ns/s: resources_template: template: resources_template:1: unclosed action`,
		}},
		{"step's template", resourceset.Spec{Steps: []resourceset.Step{{Name: "db", Resources: []map[string]any{cm("a")}}, {Name: "app", ResourcesTemplate: "<< .x"}}}, []string{
			`steps[1].resources_template: resourceset ns/s: steps[1].resources_template: step "app": resources_template: template: resources_template:1: unclosed action`,
		}},
		{"steps", resourceset.Spec{Resources: []map[string]any{cm("a")}, Steps: []resourceset.Step{{Name: "db"}, {Name: "db", Resources: []map[string]any{cm("b")}}}}, []string{
			`steps: resourceset ns/s: steps: steps are mutually exclusive with resources and resources_template`,
			`steps[0]: resourceset ns/s: steps[0]: step "db": at least one of resources or resources_template must be set`,
			`steps[1].name: resourceset ns/s: steps[1].name: step "db": name "db" is also the name of steps[0]: step names must be unique`,
		}},
		{"inputs_from", resourceset.Spec{ResourcesTemplate: "x", InputsFrom: []resourceset.InputsFrom{{Name: "a", Kind: "Nope"}, {}}}, []string{
			`inputs_from[0].kind: resourceset ns/s: inputs_from[0].kind: must be "ResourceSetInputProvider", got "Nope"`,
			`inputs_from[1]: resourceset ns/s: inputs_from[1]: set name or selector`,
		}},
		{"dependencies", resourceset.Spec{ResourcesTemplate: "x", Dependencies: []resourceset.Dependency{{APIVersion: "v1", Kind: "Secret", Name: "s", Ready: true, ReadyExpr: "data.ready == "}}}, []string{
			`dependencies[0].ready_expr: resourceset ns/s: dependencies[0].ready_expr: invalid CEL expression...`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "s", "ns"
			_, err := e.Plan(ctx, &tc.spec, nil, resourceset.PlanOptions{})
			var diags diag.Diagnostics
			addError(&diags, "Cannot plan the resource set", err)
			got := diagLines(diags)
			if len(got) != len(tc.want) {
				t.Fatalf("diagnostics:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			for i, w := range tc.want {
				if start, ok := strings.CutSuffix(w, "..."); ok && strings.HasPrefix(got[i], start) {
					continue
				}
				if got[i] != w {
					t.Errorf("diagnostic %d: %s\nwant %s", i, got[i], w)
				}
			}
		})
	}

	// Errors about the cluster are on the resource, and keep their types.
	owned := fielderr.Object(resourceset.Kind, "ns/s", fielderr.Wrap("resources_template",
		&resourceset.OwnershipError{ID: "ns_x__ConfigMap", Object: "ConfigMap/ns/x", Owner: kube.Owner{Kind: kube.OwnedBySet, Namespace: "ns", Name: "other", ID: "0a1b"}}))
	stale := fielderr.Object(resourceset.Kind, "ns/s", errors.Join(
		&resourceset.StalePlanError{Object: "ConfigMap/ns/y", Exists: true},
		&resourceset.PreviewError{Object: "Deployment/ns/web", Err: errors.New("refused")}))
	var diags diag.Diagnostics
	addError(&diags, "Resource set apply failed", owned)
	addError(&diags, "Resource set apply failed", stale)
	checkDiagLines(t, diags, []string{
		`resources_template: resourceset ns/s: resources_template: ConfigMap/ns/x is owned by stevedore_resourceset ns/other (owner 0a1b); remove it from one of the sets`,
		`-: resourceset ns/s: ConfigMap/ns/y exists now, but did not when the plan said the apply would create it; plan again`,
		`-: resourceset ns/s: Deployment/ns/web: the API server refuses it, so apply would fail: refused`,
	})
}

// resourceSetConfig is a configuration of stevedore_resourceset: name s in
// namespace ns, with what set changes.
func resourceSetConfig(t *testing.T, set func(m *resourceSetModel)) tfsdk.Config {
	t.Helper()
	ctx := context.Background()
	elem := inputsFromElemType().(types.ObjectType)
	strategy := resourceSetSchema().Blocks["input_strategy"].Type().(types.ObjectType)
	m := resourceSetModel{
		ID: types.StringNull(), Name: types.StringValue("s"), Namespace: types.StringValue("ns"),
		Inputs: types.DynamicNull(), Resources: types.DynamicNull(), Steps: types.DynamicNull(),
		ResourcesTemplate: types.StringNull(), Wait: types.BoolNull(), Timeout: types.StringNull(),
		ServiceAccountName: types.StringNull(), Force: types.BoolNull(), TakeOverFrom: types.ListNull(types.StringType),
		InputsFrom: types.ListNull(elem), InputStrategy: types.ObjectNull(strategy.AttrTypes),
		Inventory: types.ListNull(inventoryEntryType), Manifests: types.StringNull(), Drift: types.ListNull(driftEntryType),
		Changes: types.ListNull(driftEntryType), Conditions: types.ListNull(conditionType),
	}
	set(&m)
	sch := resourceSetSchema()
	st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}
	if diags := st.Set(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	return tfsdk.Config{Schema: sch, Raw: st.Raw}
}

// dynamicOf is v, plain Go, as the value of a dynamic attribute.
func dynamicOf(t *testing.T, v any) types.Dynamic {
	t.Helper()
	tv, err := tfValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return types.DynamicValue(tv)
}

// What ValidateConfig finds in steps and inputs_from is a diagnostic on the
// step's or the entry's attribute, naming the set once.
func TestResourceSetValidateConfig_attributePaths(t *testing.T) {
	ctx := context.Background()
	elem := inputsFromElemType().(types.ObjectType)
	ref := func(kind, name string) attr.Value {
		return types.ObjectValueMust(elem.AttrTypes, map[string]attr.Value{
			"api_version": types.StringNull(), "kind": types.StringValue(kind), "name": types.StringValue(name),
			"selector": types.ObjectNull(elem.AttrTypes["selector"].(types.ObjectType).AttrTypes),
		})
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}
	for _, tc := range []struct {
		name string
		set  func(m *resourceSetModel)
		want []string
	}{
		{"a step's attributes", func(m *resourceSetModel) {
			m.Steps = dynamicOf(t, []any{
				map[string]any{"name": "db", "timeout": "soon", "resources": []any{cm}},
				map[string]any{"name": "app", "resources": "none", "color": "blue"},
			})
		}, []string{
			`steps[0].timeout: resourceset ns/s: steps[0].timeout: step "db": time: invalid duration "soon"`,
			`steps[1].color: resourceset ns/s: steps[1].color: step "app": unknown attribute "color": a step has name, timeout, resources and resources_template`,
			`steps[1].resources: resourceset ns/s: steps[1].resources: step "app": resources must be a list of objects, got a string`,
		}},
		{"not a list", func(m *resourceSetModel) { m.Steps = dynamicOf(t, "db") }, []string{
			`steps: resourceset ns/s: steps: must be a list of objects, got a string`,
		}},
		{"steps refused", func(m *resourceSetModel) {
			m.ResourcesTemplate = types.StringValue("x")
			m.Steps = dynamicOf(t, []any{
				map[string]any{"name": "db", "resources": []any{cm}},
				map[string]any{"name": "db", "resources_template": "x"},
			})
		}, []string{
			`steps: resourceset ns/s: steps: steps are mutually exclusive with resources and resources_template`,
			`steps[1].name: resourceset ns/s: steps[1].name: step "db": name "db" is also the name of steps[0]: step names must be unique`,
		}},
		{"inputs_from", func(m *resourceSetModel) {
			m.ResourcesTemplate = types.StringValue("x")
			m.InputsFrom = types.ListValueMust(elem, []attr.Value{ref("ResourceSetInputProvider", "a"), ref("ResourceSet", "b")})
		}, []string{
			`inputs_from[1].kind: resourceset ns/s: inputs_from[1].kind: must be "ResourceSetInputProvider", got "ResourceSet"`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp resource.ValidateConfigResponse
			(&resourceSetResource{}).ValidateConfig(ctx, resource.ValidateConfigRequest{Config: resourceSetConfig(t, tc.set)}, &resp)
			checkDiagLines(t, resp.Diagnostics, tc.want)
		})
	}
}

// specFrom reports the steps it cannot read as ValidateConfig does.
func TestResourceSetSpecFrom_stepsOnTheirAttribute(t *testing.T) {
	m := resourceSetModel{
		Name: types.StringValue("s"), Namespace: types.StringValue("ns"),
		Inputs: types.DynamicNull(), Resources: types.DynamicNull(), ResourcesTemplate: types.StringNull(),
		Steps: dynamicOf(t, []any{map[string]any{"name": "db", "timeout": int64(5)}}),
		Wait:  types.BoolValue(false), Timeout: types.StringNull(), ServiceAccountName: types.StringNull(), Force: types.BoolValue(false),
		TakeOverFrom: types.ListNull(types.StringType),
		InputsFrom:   types.ListNull(inputsFromElemType()), InputStrategy: types.ObjectNull(resourceSetSchema().Blocks["input_strategy"].Type().(types.ObjectType).AttrTypes),
	}
	_, _, diags := specFrom(context.Background(), &m)
	checkDiagLines(t, diags, []string{
		fmt.Sprintf(`steps[0].timeout: resourceset ns/s: steps[0].timeout: step "db": timeout must be a Go duration string, got %s`, typeName(int64(5))),
	})
}

// An API server that does not answer fails every object of a set the same
// way: one diagnostic names the cause once, with how many objects it failed;
// another failure keeps its own. One object's failure stays as it is.
func TestAddError_serverDownNamedOnce(t *testing.T) {
	since := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	timeout := &kube.RequestTimeoutError{Timeout: time.Second, Err: context.DeadlineExceeded}
	down := &kube.UnreachableError{Host: "127.0.0.1:6443", Cause: timeout, Since: since}
	var errs []error
	for i := 0; i < 20; i++ {
		var cause error = down
		if i < 3 {
			cause = timeout
		}
		errs = append(errs, fmt.Errorf("ConfigMap/ns/cm-%d delete failed: Delete \"https://127.0.0.1:6443/api/v1/namespaces/ns/configmaps/cm-%d\": %w", i, i, cause))
	}
	errs = append(errs, fielderr.Errorf("resources[3]", "ConfigMap/ns/x is owned by resourceset ns/other"))
	var diags diag.Diagnostics
	addError(&diags, "Resource set delete failed", fielderr.Object(resourceset.Kind, "ns/s", errors.Join(errs...)))
	addError(&diags, "Helm uninstall failed", fielderr.Object("helmrelease", "ns/r", fmt.Errorf("uninstall: %w", down)))
	checkDiagLines(t, diags, []string{
		`resources[3]: resourceset ns/s: resources[3]: ConfigMap/ns/x is owned by resourceset ns/other`,
		`-: resourceset ns/s: the Kubernetes API server did not answer for 20 objects: ` + down.Error(),
		`-: helmrelease ns/r: uninstall: ` + down.Error(),
	})
}
