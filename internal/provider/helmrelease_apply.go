package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

func (r *helmReleaseResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan, &plan)...)
	resp.Diagnostics.Append(writeOnlyFromConfig(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// A new instance is a new owner, even over a name another
	// configuration uses: the release records it, and only a release that
	// carries it is this instance's to continue.
	owner := kube.NewOwnerID()
	if saved, fps := r.reconcile(ctx, &plan, nil, nil, owner, &resp.Diagnostics); saved {
		resp.Diagnostics.Append(setModel(ctx, &resp.State, &plan)...)
		resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &plan)...)
		resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, fps)...)
		resp.Diagnostics.Append(writeOwner(ctx, resp.Private, owner)...)
		resp.Diagnostics.Append(writeBook(ctx, resp.Private, plan.Book)...)
	}
}

func (r *helmReleaseResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan, &plan)...)
	resp.Diagnostics.Append(getModel(ctx, req.State, &state)...)
	resp.Diagnostics.Append(writeOnlyFromConfig(ctx, req.Config, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Suspend.ValueBool() {
		// Nothing happens to a suspended release: the state takes the new
		// configuration, and the release's attributes stay as read.
		plan.keepRelease(&state)
		resp.Diagnostics.Append(setModel(ctx, &resp.State, &plan)...)
		resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &plan)...)
		return
	}
	if _, diags := r.loadBook(ctx, &state, req.Private); diags.HasError() {
		resp.Diagnostics.Append(diags...)
		return
	}
	owner := ownerOrNew(ctx, req.Private)
	if saved, fps := r.reconcile(ctx, &plan, &state, readFingerprints(ctx, req.Private), owner, &resp.Diagnostics); saved {
		resp.Diagnostics.Append(setModel(ctx, &resp.State, &plan)...)
		resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &plan)...)
		resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, fps)...)
		resp.Diagnostics.Append(writeOwner(ctx, resp.Private, owner)...)
		resp.Diagnostics.Append(writeBook(ctx, resp.Private, plan.Book)...)
	}
}

// reconcile runs the engine's state machine and fills m with what really
// happened. It reports whether m is to be saved: after a failure it is, when
// the engine says what is in the cluster, so that the next apply continues
// from there (a failed install is a release that exists, with its counters).
// since and the fingerprints returned are the drift check's (private state);
// owner is the instance's owner ID.
func (r *helmReleaseResource) reconcile(ctx context.Context, m, state *helmReleaseModel, since kube.Fingerprints, owner string, diags *diag.Diagnostics) (bool, kube.Fingerprints) {
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	// Unknown at plan when the name was: the defaults apply.
	if m.ReleaseName.IsUnknown() {
		m.ReleaseName = types.StringNull()
	}
	if m.StorageNamespace.IsUnknown() {
		m.StorageNamespace = types.StringNull()
	}
	if m.Changes.IsUnknown() {
		// The plan could not tell what would change: apply does not
		// dry-run to find out afterwards.
		m.Changes = types.ListNull(driftEntryType)
	}
	if r.configUnknown() {
		addError(diags, "Provider not configured", fielderr.Object(release.Kind, m.ID.ValueString(), errors.New("the provider configuration is not known at apply")))
		return false, nil
	}
	spec, known, d := helmReleaseSpec(ctx, m)
	diags.Append(d...)
	found, err := r.chartOnThisMachine(spec, m.Chart)
	if err != nil {
		addError(diags, "Cannot find the chart", fielderr.Object(release.Kind, m.ID.ValueString(), err))
		return false, nil
	}
	known = known && found
	if !known && !diags.HasError() {
		addError(diags, "Unknown values at apply", fielderr.Object(release.Kind, m.ID.ValueString(), errors.New("a configuration value is still unknown")))
	}
	if diags.HasError() {
		return false, nil
	}
	setTriggers(ctx, spec, state, m)
	spec.Owner = owner
	prev, d := prevStatus(ctx, state)
	diags.Append(d...)
	if prev != nil {
		prev.Fingerprints = since
	}
	plannedChartVersion := m.ChartVersion
	if v := m.ConfigDigest; !v.IsUnknown() && !v.IsNull() {
		spec.PlannedConfigDigest = v.ValueString()
	}
	if v := m.ApplyMethod; !v.IsUnknown() && !v.IsNull() {
		spec.PlannedApplyMethod = v.ValueString()
	}
	if m.Chart.inline() && !r.buildInlineChart(ctx, m, spec, diags) {
		return false, nil
	}

	status, err := r.engine().Reconcile(ctx, spec, prev)
	if status == nil {
		if err == nil {
			err = errors.New("the engine returned no status")
		}
		addError(diags, "Release failed", err)
		return false, nil
	}
	plannedMethod := m.ApplyMethod
	m.setStatus(status)
	if plannedMethod.IsNull() {
		// A state written before status.apply_method existed, planned
		// with -refresh=false and no Helm action: the plan kept it null,
		// and so does the apply; the next refresh reads it.
		m.ApplyMethod = plannedMethod
	}
	if err != nil {
		addError(diags, "Release failed", err)
		return true, status.Fingerprints
	}
	// What the plan promised must be what happened; when the chart changed
	// between plan and apply, say so rather than let Terraform report an
	// inconsistent result. (Changed values are refused before any action.)
	if v := plannedChartVersion; !v.IsUnknown() && !v.IsNull() && v.ValueString() != status.ChartVersion {
		diags.AddAttributeError(path.Root("chart"), "Chart changed since the plan",
			about(release.Kind, m.ID.ValueString(), "planned chart version %s, released %s; plan again", v.ValueString(), status.ChartVersion))
	}
	return true, status.Fingerprints
}

// buildInlineChart fetches, packages and verifies an inline chart into the
// cache, at the version the plan resolved when it did, and points the spec at
// the archive.
func (r *helmReleaseResource) buildInlineChart(ctx context.Context, m *helmReleaseModel, spec *release.Spec, diags *diag.Diagnostics) bool {
	id := m.ID.ValueString()
	cspec, known, d := r.inlineChartSpec(m.Chart)
	diags.Append(d...)
	if !known && !diags.HasError() {
		addError(diags, "Unknown values at apply", fielderr.Object(release.Kind, id, errors.New("a chart attribute is still unknown")))
	}
	if diags.HasError() {
		return false
	}
	var keep string
	if d := m.ChartDigest; !d.IsUnknown() && !d.IsNull() {
		keep = d.ValueString()
	}
	a, err := r.inlineArtifact(ctx, id, cspec, diags)
	if err != nil {
		addError(diags, "Cannot fetch the chart", fielderr.Object(release.Kind, m.ID.ValueString(), fielderr.Under("chart", err)))
		return false
	}
	if keep != "" && a.Digest != keep {
		diags.AddAttributeError(path.Root("chart"), "Chart changed since the plan",
			about(release.Kind, id, "planned chart digest %s, fetched %s; plan again", keep, a.Digest))
		return false
	}
	spec.ChartPath, spec.ChartDigest = a.Path, a.Digest
	return true
}
