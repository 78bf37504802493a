package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// loadBook sets m.Book, the release's bookkeeping, from the private state p
// or, for a state written before the bookkeeping moved there (schema
// version 1 and older, whose upgrade could not move it), from Helm storage as
// an import reads it: the failure counters start over. It reports whether it
// rebuilt the book, which the caller then saves.
func (r *helmReleaseResource) loadBook(ctx context.Context, m *helmReleaseModel, p privateReader) (bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	if m.Book = readBook(ctx, p); m.Book != nil || m.Status.IsNull() && m.Version.IsNull() || r.configUnknown() {
		return false, diags
	}
	imp, err := r.engine().Import(ctx, m.StorageNamespace.ValueString(), m.ReleaseName.ValueString())
	var nf *release.NotFoundError
	switch {
	case errors.As(err, &nf):
		// Nothing in storage: refresh removes the resource, a plan
		// installs the release again.
		m.Book = &releaseBook{}
	case err != nil:
		addError(&diags, "Cannot read the release history", fielderr.Object(release.Kind, m.ID.ValueString(), err))
		return false, diags
	default:
		m.Book = bookOf(imp.Status)
	}
	return true, diags
}

// Read refreshes the release from Helm storage, with the drift of its objects.
// A release that is gone leaves the state, so that the plan installs it again.
func (r *helmReleaseResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.State, &state)...)
	// First, so that every way out has it, a release found gone (its
	// removal from state too) included.
	resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &state)...)
	if resp.Diagnostics.HasError() || r.configUnknown() {
		return
	}
	spec, known, diags := helmReleaseSpec(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	if state.Chart.inline() {
		spec.ChartDigest = state.ChartDigest.ValueString()
	}
	if _, diags := r.loadBook(ctx, &state, req.Private); diags.HasError() {
		resp.Diagnostics.Append(diags...)
		return
	}
	prev, diags := prevStatus(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if prev != nil {
		prev.Fingerprints = readFingerprints(ctx, req.Private)
	}
	status, err := r.engine().Observe(ctx, spec, prev)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot read the release", err)
		return
	}
	if status == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	state.setStatus(status)
	// The changes of the last install or upgrade are history once refreshed:
	// a plan then shows only those of its own upgrade, not a diff against
	// the previous one's.
	state.Changes = types.ListNull(driftEntryType)
	resp.Diagnostics.Append(setModel(ctx, &resp.State, &state)...)
	resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &state)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, status.Fingerprints)...)
	resp.Diagnostics.Append(writeBook(ctx, resp.Private, state.Book)...)
}
