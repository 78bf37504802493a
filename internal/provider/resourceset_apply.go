package provider

import (
	"context"
	"errors"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

func (r *resourceSetResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A new instance is a new owner, even over a name another
	// configuration uses: its objects carry the ID, and only objects that
	// carry it are the set's.
	owner := kube.NewOwnerID()
	inSync := r.apply(ctx, &plan, nil, nil, nil, owner, &resp.Diagnostics)
	if resp.Diagnostics.HasError() && len(plan.Inventory.Elements()) == 0 {
		// Refused before anything of the set was written (objects of
		// another owner, a claim another apply won): nothing is saved, so
		// there is nothing for a destroy to undo, and no tainted resource
		// whose replacement would plan over the other owner's objects.
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &plan)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, inSync)...)
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, owner)...)
}

func (r *resourceSetResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Suspend.ValueBool() {
		// Nothing happens to a suspended set: the state takes the new
		// configuration, and the set's attributes stay as read (the plan
		// copied them: planSuspendedSet).
		keepSet(&plan, &state)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &plan)...)
		return
	}
	prev, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	// A state written before owners were recorded stays without one: its
	// objects carry none, and the plan's dry runs did not add one.
	inSync := r.apply(ctx, &plan, prev, inventorySteps(ctx, state.Inventory), readFingerprints(ctx, req.Private), readOwner(ctx, req.Private), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &plan)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, inSync)...)
}

// apply runs the engine and fills m, the plan, with what really happened, also
// after a failure, so that the state saved with the error is the cluster's.
// prevSteps are the steps of prev's entries, and since the fingerprints of
// the objects the plan's refresh found in sync (private state): those not
// written since are not applied again. It returns the fingerprints of the
// objects in sync after the apply. owner is the instance's owner ID.
func (r *resourceSetResource) apply(ctx context.Context, m *resourceSetModel, prev []kube.Entry, prevSteps map[string]string, since kube.Fingerprints, owner string, diags *diag.Diagnostics) kube.Fingerprints {
	planned, d := plannedAdoptions(ctx, m.Inventory)
	diags.Append(d...)
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	m.Drift = types.ListValueMust(driftEntryType, nil)
	if m.Changes.IsUnknown() {
		// The plan could not tell: apply does not dry-run to find out.
		m.Changes = types.ListNull(driftEntryType)
	}
	spec, known, d := specFrom(ctx, m)
	diags.Append(d...)
	if !known && !diags.HasError() {
		addError(diags, "Unknown values at apply", fielderr.Object(resourceset.Kind, m.ID.ValueString(), errors.New("inputs or resources are still unknown")))
	}
	if diags.HasError() {
		r.keepInventory(m, prev, prevSteps)
		return nil
	}
	spec.Owner = owner
	opts := resourceset.ApplyOptions{Planned: planned, Since: since}
	if !m.Manifests.IsUnknown() && !m.Manifests.IsNull() {
		opts.PlannedDigest = resourceset.Digest(m.Manifests.ValueString())
	}
	res, err := r.engine().Apply(ctx, spec, prev, opts)
	if stale := (*resourceset.StalePlanError)(nil); errors.As(err, &stale) && stale.Inputs {
		// Nothing was applied: the state keeps what it had, and no
		// manifests, so that the next plan shows the objects to apply.
		addError(diags, "Inputs changed since the plan", err)
		r.keepInventory(m, prev, prevSteps)
		m.Manifests = types.StringNull()
		return nil
	}
	// An entry the set no longer renders keeps the step it was applied by.
	steps := maps.Clone(prevSteps)
	if steps == nil {
		steps = map[string]string{}
	}
	maps.Copy(steps, res.Steps)
	m.Inventory = inventoryValue(res.Inventory, steps)
	m.Manifests = types.StringValue(res.Manifests)
	if m.Conditions.IsUnknown() || err != nil {
		// Known at plan when the plan found the set unchanged (an update
		// of `resources` that renders the same objects, after an import):
		// the planned value stands.
		m.Conditions = conditionsValue(res.Conditions)
	}
	if err != nil {
		addError(diags, "Resource set apply failed", err)
	}
	return res.InSync
}

func (r *resourceSetResource) keepInventory(m *resourceSetModel, prev []kube.Entry, prevSteps map[string]string) {
	m.Inventory = inventoryValue(prev, prevSteps)
	if m.Manifests.IsUnknown() {
		m.Manifests = types.StringNull()
	}
	if m.Conditions.IsUnknown() {
		m.Conditions = types.ListNull(conditionType)
	}
}
