package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

func (r *resourceSetResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state resourceSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if state.Suspend.ValueBool() {
		// flux-operator deletes nothing of a disabled ResourceSet.
		resp.Diagnostics.AddWarning("Objects left in the cluster",
			about(resourceset.Kind, state.ID.ValueString(), "suspend is set, so destroy removes the resource from state and leaves its %d objects in the cluster, "+
				"with their owner labels: to delete them, apply with suspend unset first, then destroy", len(state.Inventory.Elements())))
		return
	}
	// State holds no unknown value; were one there, it would read as empty,
	// and the delete goes by the inventory.
	spec, _, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	spec.Owner = readOwner(ctx, req.Private)
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	remaining, err := r.engine().Delete(ctx, spec, inv)
	if err != nil {
		// Keep what is left in state, so that the next destroy tries again.
		state.Inventory = inventoryValue(remaining, inventorySteps(ctx, state.Inventory))
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		addError(&resp.Diagnostics, "Resource set delete failed", err)
	}
}
