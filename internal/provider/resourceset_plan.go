package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// ModifyPlan renders the set at plan time so that the objects to create and to
// prune show as inventory changes and the rendered manifests as a diff. Drift
// found at refresh is planned away (drift -> []). Entries of the prior
// inventory keep their `adopted`; the engine reads the objects new to it from
// the cluster to plan theirs, and refuses objects owned by another set.
func (r *resourceSetResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *resourceSetModel
	if !req.State.Raw.IsNull() {
		state = &resourceSetModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}

	if state != nil {
		var cfg resourceSetModel
		resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
		keepNullDefaults(&plan, state, &cfg)
	}
	plan.Drift = emptyDrift()
	if !plan.Name.IsUnknown() && !plan.Namespace.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}

	spec, known, diags := specFrom(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Suspend.ValueBool() {
		planSuspendedSet(&plan, state, resp)
		if !resp.Diagnostics.HasError() {
			resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		}
		return
	}
	if !known || r.data == nil || r.data.unknown {
		plan.Inventory = types.ListUnknown(inventoryEntryType)
		plan.Manifests = types.StringUnknown()
		plan.Conditions = types.ListUnknown(conditionType)
		plan.Changes = types.ListUnknown(driftEntryType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	var prev []kube.Entry
	if state != nil {
		prev, diags = inventoryEntries(ctx, state.Inventory)
		resp.Diagnostics.Append(diags...)
	}
	spec.Owner, spec.Creating = readOwner(ctx, req.Private), state == nil
	res, err := r.engine().Plan(ctx, spec, prev, resourceset.PlanOptions{Preview: true,
		Unchanged: func(res *resourceset.Result) bool { return setUnchanged(res, &plan, state) }})
	if err != nil {
		addError(&resp.Diagnostics, "Cannot plan the resource set", err)
		return
	}
	plan, diags = plannedSet(res, plan, state)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// planSuspendedSet plans a suspended set, flux-operator's ResourceSet with
// `fluxcd.controlplane.io/reconcile: disabled`: the apply skips it, so its
// computed attributes stay as the last apply and refresh left them, and the
// plan warns. A set is created and replaced only unsuspended: an error on
// `suspend`.
func planSuspendedSet(plan, state *resourceSetModel, resp *resource.ModifyPlanResponse) {
	id := plan.ID.ValueString()
	switch {
	case state == nil:
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot create a suspended resource set",
			about(resourceset.Kind, id, "a suspended set is left alone, so it would never be applied: create it with suspend unset, or import it"))
		return
	case len(resp.RequiresReplace) > 0:
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot replace a suspended resource set",
			about(resourceset.Kind, id, "this change replaces the set (its objects deleted, then applied again), which a suspended set does not do: unset suspend to apply it"))
		return
	}
	msg := "suspend is set: the apply is skipped (nothing applied, nothing pruned), and destroy leaves the set's objects in the cluster"
	if !setConfigUnchanged(state, plan) {
		msg += "; the configuration changed since the last apply: it is saved, and applied once suspend is unset"
	}
	resp.Diagnostics.AddWarning("Resource set suspended", about(resourceset.Kind, id, "%s", msg))
	keepSet(plan, state)
}

// keepSet copies the computed attributes of the set from state into m, for
// an apply that changes nothing in the cluster.
func keepSet(m, state *resourceSetModel) {
	m.ID = state.ID
	m.Inventory, m.Manifests = state.Inventory, state.Manifests
	m.Drift, m.Changes, m.Conditions = state.Drift, state.Changes, state.Conditions
}

// setConfigUnchanged says that the configuration of plan renders from what
// state was applied with: the attributes the objects are rendered from, and
// sameSettings.
func setConfigUnchanged(state, plan *resourceSetModel) bool {
	if !sameSettings(state, plan) || !state.Inputs.Equal(plan.Inputs) || !state.Resources.Equal(plan.Resources) ||
		!state.ResourcesTemplate.Equal(plan.ResourcesTemplate) {
		return false
	}
	a, b := state.CommonMetadata, plan.CommonMetadata
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || a.Labels.Equal(b.Labels) && a.Annotations.Equal(b.Annotations)
}

// plannedSet turns the engine's plan res into the planned model and the
// plan's warnings: plan is the model as ModifyPlan has filled it so far,
// state the prior state (nil for a create). It calls nothing: every decision
// in it is on its arguments, so its table test reaches every branch.
func plannedSet(res *resourceset.Result, plan resourceSetModel, state *resourceSetModel) (resourceSetModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	id := plan.ID.ValueString()
	for _, w := range res.Warnings {
		addWarning(&diags, w.Summary, fielderr.Object(resourceset.Kind, id, w))
	}
	plan.Inventory = plannedInventoryValue(res.Inventory, res.Undecided, res.Steps)
	plan.Manifests = types.StringValue(res.Manifests)
	if setUnchanged(res, &plan, state) {
		plan.Conditions, plan.Changes = state.Conditions, state.Changes
		return plan, diags
	}
	plan.Conditions = types.ListUnknown(conditionType)
	pv := res.Preview
	if pv == nil {
		// Objects of an earlier incarnation of this set (a replace after a
		// failed create): the destroy that comes first in the same apply
		// changes them, so what the apply then does is not known yet.
		plan.Changes = types.ListUnknown(driftEntryType)
		return plan, diags
	}
	for _, w := range pv.Warnings {
		diags.AddWarning("Apply may fail", about(resourceset.Kind, id, "%s", w))
	}
	if pv.Unknown != "" {
		// The plan's warnings said why (a service account that is missing).
		plan.Changes = types.ListUnknown(driftEntryType)
		return plan, diags
	}
	plan.Changes = driftValue(pv.Changes)
	return plan, diags
}

// setUnchanged says that the plan res leaves the set as state has it: no
// drift to plan away, the same inventory and manifests, the same settings.
func setUnchanged(res *resourceset.Result, plan, state *resourceSetModel) bool {
	if state == nil || !state.Drift.Equal(emptyDrift()) || !sameSettings(state, plan) {
		return false
	}
	return state.Inventory.Equal(plannedInventoryValue(res.Inventory, res.Undecided, res.Steps)) &&
		state.Manifests.Equal(types.StringValue(res.Manifests))
}

// sameSettings compares the configuration that does not show in the rendered
// manifests.
func sameSettings(a, b *resourceSetModel) bool {
	if !a.InputsFrom.Equal(b.InputsFrom) || !a.InputStrategy.Equal(b.InputStrategy) {
		return false
	}
	if !a.Steps.Equal(b.Steps) || !a.Wait.Equal(b.Wait) || !a.Timeout.Equal(b.Timeout) || !a.ServiceAccountName.Equal(b.ServiceAccountName) ||
		!a.Force.Equal(b.Force) || !a.TakeOverFrom.Equal(b.TakeOverFrom) {
		return false
	}
	if len(a.Dependencies) != len(b.Dependencies) {
		return false
	}
	for i := range a.Dependencies {
		if a.Dependencies[i] != b.Dependencies[i] {
			return false
		}
	}
	return true
}

// keepNullDefaults keeps `wait`, `timeout` and `force` null in plan where
// state has them null (an import leaves them so, and a null reads as the
// default) and the configuration sets none: the schema's default would
// otherwise plan an update from null to the default's value, which changes
// nothing.
func keepNullDefaults(plan, state, cfg *resourceSetModel) {
	if state.Wait.IsNull() && cfg.Wait.IsNull() {
		plan.Wait = types.BoolNull()
	}
	if state.Timeout.IsNull() && cfg.Timeout.IsNull() {
		plan.Timeout = types.StringNull()
	}
	if state.Force.IsNull() && cfg.Force.IsNull() {
		plan.Force = types.BoolNull()
	}
}
