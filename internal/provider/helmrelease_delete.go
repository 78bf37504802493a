package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

func (r *helmReleaseResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.State, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.configUnknown() {
		addError(&resp.Diagnostics, "Provider not configured", fielderr.Object(release.Kind, state.ID.ValueString(), errors.New("the provider configuration is not known")))
		return
	}
	if state.Suspend.ValueBool() {
		// helm-controller skips the uninstall of a suspended HelmRelease.
		resp.Diagnostics.AddWarning("Release left installed",
			about(release.Kind, state.ID.ValueString(), "suspend is set, so destroy removes the resource from state and leaves release %s in storage namespace %s", state.ReleaseName.ValueString(), state.StorageNamespace.ValueString()))
		return
	}
	spec, _, diags := helmReleaseSpec(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec.Owner = readOwner(ctx, req.Private)
	var elsewhere *release.OwnedElsewhereError
	kept, err := r.engine().Uninstall(ctx, spec)
	switch {
	case errors.As(err, &elsewhere):
		resp.Diagnostics.AddWarning("Release left installed", err.Error()+". Destroy removes this resource from the state only.")
	case err != nil:
		addError(&resp.Diagnostics, "Uninstall failed", err)
	case kept != "":
		resp.Diagnostics.AddWarning("Objects left in the cluster",
			about(release.Kind, state.ID.ValueString(), "Helm uninstalled release %s and left these objects, which destroy does not delete:\n%s", state.ReleaseName.ValueString(), kept))
	}
}
