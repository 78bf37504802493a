package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// Read refreshes the drift: each object the set renders and owns is dry-run
// applied, and the objects that changed or are gone are recorded.
func (r *resourceSetResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state resourceSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	// First, so that every way out has it.
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &state)...)
	if resp.Diagnostics.HasError() || r.data == nil || r.data.unknown {
		return
	}
	if state.InputsFrom.IsNull() {
		// State written before inputs_from existed: absent blocks are an
		// empty list in the configuration, so that a null would plan an
		// update.
		state.InputsFrom = types.ListValueMust(inputsFromElemType(), nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	}
	spec, known, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	spec.Owner = readOwner(ctx, req.Private)
	if state.Suspend.ValueBool() && !r.rendersAsApplied(ctx, spec, &state) {
		// The configuration in state was saved while the set was
		// suspended, and is not what the last apply applied: its
		// differences from the cluster are the pending change, not drift.
		// The drift read before stays until suspend is unset.
		return
	}
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	report, err := r.engine().CheckDrift(ctx, spec, inv, readFingerprints(ctx, req.Private))
	if err != nil {
		resp.Diagnostics.AddWarning("Cannot check the resource set for drift", err.Error())
		return
	}
	state.Drift = driftValue(report.Drift)
	// The last apply's changes are history once refreshed: each plan shows
	// only its own.
	state.Changes = types.ListNull(driftEntryType)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, report.InSync)...)
}

// rendersAsApplied says that spec, the configuration in state m, renders the
// manifests the last apply recorded.
func (r *resourceSetResource) rendersAsApplied(ctx context.Context, spec *resourceset.Spec, m *resourceSetModel) bool {
	objs, err := r.engine().Desired(ctx, spec)
	if err != nil {
		return false
	}
	manifests, err := resourceset.Manifests(objs)
	return err == nil && m.Manifests.Equal(types.StringValue(manifests))
}
