package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

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
	ns, name, ok := strings.Cut(importID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("import ID %q: want <namespace>/<name>", importID))
		return
	}
	if r.data == nil || r.data.unknown {
		resp.Diagnostics.AddError("Provider not configured", "import needs a known provider configuration")
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
