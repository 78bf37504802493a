package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// ImportState brings a set's objects under this resource: `<namespace>/<name>`
// finds the objects that carry the set's owner labels, in every kind the
// cluster serves, with the owner ID they carry (one instance's only). It is
// the recovery of a create that was killed before it saved state: its objects
// carry an owner ID nothing else can prove is this resource's. Objects the
// set adopted (their adoption record says so) stay adopted, so that destroy
// deletes only what the set created. `resources` are the objects as the
// set applied them (resourceset.ConfigObject), in inventory order, so that
// `plan -generate-config-out` writes a configuration that plans no change;
// a set made with `steps` is written as one list of resources. `wait`,
// `timeout` and `force` are null, which reads as their defaults, so that the
// generated configuration does not write the defaults' values; the plan
// keeps them null until the configuration sets them (keepNullDefaults).
//
// An import block's identity (namespace, name) names the same as the ID.
func (r *resourceSetResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importID := req.ID
	if importID == "" && req.Identity != nil {
		var diags diag.Diagnostics
		importID, diags = resourceSetImportID(ctx, req.Identity)
		if resp.Diagnostics.Append(diags...); resp.Diagnostics.HasError() {
			return
		}
	}
	rest, fluxOperator := strings.CutPrefix(importID, resourceset.FluxOperatorIDPrefix)
	ns, name, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("import ID %q: want <namespace>/<name>, or %s<namespace>/<name> for a flux-operator ResourceSet",
			importID, resourceset.FluxOperatorIDPrefix))
		return
	}
	if r.data == nil || r.data.unknown {
		resp.Diagnostics.AddError("Provider not configured", "import needs a known provider configuration")
		return
	}
	if fluxOperator {
		r.importFluxOperator(ctx, ns, name, resp)
		return
	}
	imp, err := r.engine().Import(ctx, ns, name)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot import the resource set", err)
		return
	}
	m := resourceSetModel{
		ID: types.StringValue(importID), Name: types.StringValue(name), Namespace: types.StringValue(ns),
		Inputs: types.DynamicNull(), Resources: types.DynamicNull(), ResourcesTemplate: types.StringNull(), Steps: types.DynamicNull(),
		Wait: types.BoolNull(), Timeout: types.StringNull(), ServiceAccountName: types.StringNull(), Force: types.BoolNull(),
		TakeOverFrom: types.ListNull(types.StringType), InputsFrom: types.ListValueMust(inputsFromElemType(), nil),
		InputStrategy: types.ObjectNull(inputStrategyAttrTypes()),
		Inventory:     inventoryValue(imp.Inventory, nil), Manifests: types.StringNull(),
		Drift: types.ListValueMust(driftEntryType, nil), Changes: types.ListNull(driftEntryType), Conditions: types.ListNull(conditionType),
	}
	if len(imp.Objects) > 0 {
		objs := make([]any, len(imp.Objects))
		for i, o := range imp.Objects {
			objs[i] = o
		}
		v, err := tfValue(objs)
		if err != nil {
			addError(&resp.Diagnostics, "Cannot import the resource set", fmt.Errorf("the objects of %s: %w", importID, err))
			return
		}
		m.Resources = types.DynamicValue(v)
		// The manifests the plan of that configuration renders, so that it
		// plans no change.
		spec, known, diags := specFrom(ctx, &m)
		if resp.Diagnostics.Append(diags...); resp.Diagnostics.HasError() {
			return
		}
		if known {
			spec.Owner = imp.Owner
			res, err := r.engine().Plan(ctx, spec, imp.Inventory, resourceset.PlanOptions{})
			if err != nil {
				addError(&resp.Diagnostics, "Cannot import the resource set", err)
				return
			}
			m.Manifests = types.StringValue(res.Manifests)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &m)...)
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, imp.Owner)...)
}

// importFluxOperator imports the flux-operator ResourceSet ns/name as the
// stevedore_resourceset ns/name that takes over its objects: the
// configuration is the ResourceSet's spec (fluxOperatorSetModel), the
// inventory is empty, and the owner ID is new. Nothing is written: the plan
// that follows lists every object the first apply takes over (the apply
// writes the set's owner labels on each, in place), and warns what the
// configuration does not carry over.
func (r *resourceSetResource) importFluxOperator(ctx context.Context, ns, name string, resp *resource.ImportStateResponse) {
	fo, err := r.engine().ReadFluxOperator(ctx, ns, name)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot import the resource set", err)
		return
	}
	m, err := fluxOperatorSetModel(fo)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot import the resource set", err)
		return
	}
	for _, note := range fo.Notes {
		resp.Diagnostics.AddWarning("flux-operator ResourceSet imported", note)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &m)...)
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, kube.NewOwnerID())...)
}

// fluxOperatorSetModel is the state of a set imported from the flux-operator
// ResourceSet fo: each attribute as a user writes it, null where the
// ResourceSet leaves the default (wait, timeout), so that
// `plan -generate-config-out` writes the ResourceSet's spec and nothing else.
func fluxOperatorSetModel(fo *resourceset.FluxOperatorSet) (resourceSetModel, error) {
	s := fo.Spec
	m := resourceSetModel{
		ID: types.StringValue(s.Namespace + "/" + s.Name), Name: types.StringValue(s.Name), Namespace: types.StringValue(s.Namespace),
		ResourcesTemplate: nullIfEmpty(s.ResourcesTemplate), Wait: types.BoolNull(), Timeout: types.StringNull(),
		ServiceAccountName: nullIfEmpty(s.ServiceAccountName), Force: types.BoolNull(),
		TakeOverFrom:  types.ListValueMust(types.StringType, []attr.Value{types.StringValue(kube.TakeOverFluxOperator)}),
		Dependencies:  dependencyModels(s.Dependencies),
		InputsFrom:    inputsFromValue(s.InputsFrom),
		InputStrategy: types.ObjectNull(inputStrategyAttrTypes()),
		Inventory:     inventoryValue(nil, nil), Manifests: types.StringNull(),
		Drift: types.ListValueMust(driftEntryType, nil), Changes: types.ListNull(driftEntryType), Conditions: types.ListNull(conditionType),
	}
	if s.Wait {
		m.Wait = types.BoolValue(true)
	}
	if s.Timeout > 0 {
		m.Timeout = types.StringValue(durationText(s.Timeout))
	}
	if s.InputStrategy != "" {
		include := types.BoolNull()
		if s.IncludeEmptyProviders {
			include = types.BoolValue(true)
		}
		m.InputStrategy = types.ObjectValueMust(inputStrategyAttrTypes(), map[string]attr.Value{"name": types.StringValue(s.InputStrategy), "include_empty_providers": include})
	}
	if cm := s.CommonMetadata; len(cm.Labels) > 0 || len(cm.Annotations) > 0 {
		m.CommonMetadata = &commonMetadataModel{Labels: stringMapValue(cm.Labels), Annotations: stringMapValue(cm.Annotations)}
	}
	var err error
	for _, f := range []struct {
		to   *types.Dynamic
		what string
		v    []any
	}{{&m.Inputs, "spec.inputs", anyObjects(s.Inputs)}, {&m.Resources, "spec.resources", anyObjects(s.Resources)}, {&m.Steps, "spec.steps", stepObjects(s.Steps)}} {
		if *f.to, err = dynamicList(f.v); err != nil {
			return m, fmt.Errorf("flux-operator ResourceSet %s/%s: %s: %w", s.Namespace, s.Name, f.what, err)
		}
	}
	return m, nil
}

// dynamicList is v as a dynamic value, null when v is empty.
func dynamicList(v []any) (types.Dynamic, error) {
	if len(v) == 0 {
		return types.DynamicNull(), nil
	}
	tv, err := tfValue(v)
	if err != nil {
		return types.DynamicNull(), err
	}
	return types.DynamicValue(tv), nil
}

// anyObjects is ms as a list of values.
func anyObjects(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, o := range ms {
		out[i] = o
	}
	return out
}

// stepObjects are steps as the `steps` attribute is written: name, and
// timeout, resources and resources_template where set.
func stepObjects(steps []resourceset.Step) []any {
	out := make([]any, len(steps))
	for i, st := range steps {
		step := map[string]any{"name": st.Name}
		if st.Timeout > 0 {
			step["timeout"] = durationText(st.Timeout)
		}
		if len(st.Resources) > 0 {
			step["resources"] = anyObjects(st.Resources)
		}
		if st.ResourcesTemplate != "" {
			step["resources_template"] = st.ResourcesTemplate
		}
		out[i] = step
	}
	return out
}

// stringMapValue is m, null when empty.
func stringMapValue(m map[string]string) types.Map {
	if len(m) == 0 {
		return types.MapNull(types.StringType)
	}
	vals := make(map[string]attr.Value, len(m))
	for k, v := range m {
		vals[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, vals)
}

// stringListValue is l, null when empty.
func stringListValue(l []string) types.List {
	if len(l) == 0 {
		return types.ListNull(types.StringType)
	}
	vals := make([]attr.Value, len(l))
	for i, v := range l {
		vals[i] = types.StringValue(v)
	}
	return types.ListValueMust(types.StringType, vals)
}

// dependencyModels are deps as `dependencies` blocks are written: ready only
// when true, namespace and ready_expr only when set.
func dependencyModels(deps []resourceset.Dependency) []dependencyModel {
	var out []dependencyModel
	for _, d := range deps {
		ready := types.BoolNull()
		if d.Ready {
			ready = types.BoolValue(true)
		}
		out = append(out, dependencyModel{APIVersion: types.StringValue(d.APIVersion), Kind: types.StringValue(d.Kind),
			Name: types.StringValue(d.Name), Namespace: nullIfEmpty(d.Namespace), Ready: ready, ReadyExpr: nullIfEmpty(d.ReadyExpr)})
	}
	return out
}

// inputsFromValue is refs as the `inputs_from` blocks.
func inputsFromValue(refs []resourceset.InputsFrom) types.List {
	elem := inputsFromElemType().(types.ObjectType)
	vals := make([]attr.Value, 0, len(refs))
	for _, ref := range refs {
		vals = append(vals, types.ObjectValueMust(elem.AttrTypes, map[string]attr.Value{
			"api_version": nullIfEmpty(ref.APIVersion), "kind": nullIfEmpty(ref.Kind), "name": nullIfEmpty(ref.Name),
			"selector": labelSelectorValue(elem.AttrTypes["selector"].(types.ObjectType), ref.Selector)}))
	}
	return types.ListValueMust(elem, vals)
}

// labelSelectorValue is sel as a `selector` block of type t (null for nil).
func labelSelectorValue(t types.ObjectType, sel *metav1.LabelSelector) types.Object {
	if sel == nil {
		return types.ObjectNull(t.AttrTypes)
	}
	exprType := t.AttrTypes["match_expressions"].(types.ListType).ElemType.(types.ObjectType)
	exprs := make([]attr.Value, 0, len(sel.MatchExpressions))
	for _, e := range sel.MatchExpressions {
		exprs = append(exprs, types.ObjectValueMust(exprType.AttrTypes, map[string]attr.Value{
			"key": types.StringValue(e.Key), "operator": types.StringValue(string(e.Operator)), "values": stringListValue(e.Values)}))
	}
	return types.ObjectValueMust(t.AttrTypes, map[string]attr.Value{
		"match_labels": stringMapValue(sel.MatchLabels), "match_expressions": types.ListValueMust(exprType, exprs)})
}
