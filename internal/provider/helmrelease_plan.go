package provider

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// ModifyPlan shows what apply will do. The engine decides the first action
// from the release in the cluster and the state (helm-controller's order);
// anything but "nothing" makes the release's computed attributes unknown, with
// what is known at plan time filled in: the chart version an upgrade installs,
// the digest of the values, drift going to [].
func (r *helmReleaseResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.Plan, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *helmReleaseModel
	if !req.State.Raw.IsNull() {
		state = &helmReleaseModel{}
		resp.Diagnostics.Append(getModel(ctx, req.State, state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		rebuilt, diags := r.loadBook(ctx, state, req.Private)
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		if rebuilt {
			// Apply continues from the plan's private state.
			resp.Diagnostics.Append(writeBook(ctx, resp.Private, state.Book)...)
		}
	}

	// release_name and storage_namespace are computed when not set: start
	// from the configuration, not from the framework's unknown. So is a
	// chart given by digest alone: its path is the state's.
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("release_name"), &plan.ReleaseName)...)
	if plan.Chart != nil {
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("chart").AtName("path"), &plan.Chart.Path)...)
		if plan.Chart.Path.IsNull() && state != nil && state.Chart != nil && !plan.Chart.inline() {
			plan.Chart.Path = state.Chart.Path
		}
	}
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("storage_namespace"), &plan.StorageNamespace)...)
	resp.Diagnostics.Append(writeOnlyFromConfig(ctx, req.Config, &plan)...)
	spec, known, diags := helmReleaseSpec(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if found, err := r.chartOnThisMachine(spec, plan.Chart); err != nil {
		addError(&resp.Diagnostics, "Cannot find the chart", fielderr.Object(release.Kind, plan.ID.ValueString(), err))
		return
	} else if !found {
		known = false
	}
	setTriggers(ctx, spec, state, &plan)
	if !plan.Name.IsUnknown() && !plan.Namespace.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}
	r.planIdentity(spec, &plan, state, resp)

	// The chart's own metadata: a new name replaces the release (or
	// upgrades it, as upgrade.chart_name_change_strategy says), a new
	// version is shown as such.
	meta, ok := r.planChart(ctx, spec, &plan, resp)
	if !ok {
		return
	}
	if meta != nil && state != nil {
		planChartNameChange(spec, state.ChartName.ValueString(), meta.Name, plan.ID.ValueString(), resp)
	}
	r.planStorage(spec, &plan, state, resp)

	mode := spec.DriftDetection.Mode
	if state != nil && mode.Warns() && len(state.Drift.Elements()) > 0 {
		resp.Diagnostics.AddWarning("Release drifted",
			about(release.Kind, plan.ID.ValueString(), "%s; drift_detection.mode is warn, so apply leaves it", driftSummary(state.Drift)))
	}

	if plan.Suspend.ValueBool() {
		r.planSuspended(ctx, &plan, state, resp)
		return
	}
	if !known && state == nil && !r.configUnknown() {
		r.warnCreateConflict(ctx, &plan, resp)
	}
	if !known || r.configUnknown() || len(resp.RequiresReplace) > 0 {
		planUnknown(&plan, meta, mode)
		resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
		return
	}

	prev, diags := prevStatus(ctx, state)
	resp.Diagnostics.Append(diags...)
	p, err := r.engine().Plan(ctx, spec, prev)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot plan the release", err)
		return
	}
	plan, diags = plannedRelease(p, plan, state, meta, spec)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
}

// plannedRelease turns the engine's plan p into the planned model and the
// plan's warnings: plan is the model as ModifyPlan has filled it so far,
// state the prior state (nil for a create), meta the chart's metadata (nil
// when not known), spec the spec p was made from. It calls nothing: every
// decision in it is on its arguments, so its table test reaches every branch.
func plannedRelease(p *release.Plan, plan helmReleaseModel, state *helmReleaseModel, meta *chart.Metadata, spec *release.Spec) (helmReleaseModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	id := plan.ID.ValueString()
	mode := spec.DriftDetection.Mode
	if p.ValuesMissing != "" {
		diags.AddAttributeWarning(path.Root("values_from"), "Values not found: apply may fail",
			fmt.Sprintf("%s: another resource may create it before this one is applied; apply fails if it is still missing", p.ValuesMissing))
		plan.ConfigDigest = types.StringUnknown()
		planUnknown(&plan, meta, mode)
		return plan, diags
	}
	plan.ConfigDigest = types.StringValue(p.ConfigDigest)
	plan.PostRenderersDigest = types.StringValue(p.PostRenderersDigest)
	if p.Conflict != nil {
		addWarning(&diags, "Release already exists", fielderr.Object(release.Kind, id, &release.ConflictWarning{Exists: p.Conflict}))
	}

	if p.ChangedOutside != "" {
		diags.AddWarning("Release changed outside stevedore", about(release.Kind, id, "%s", p.ChangedOutside))
	}

	action := p.Action
	if p.Stalled != "" && state != nil {
		// Remediation is out of retries: apply fails, as it did, and keeps
		// failing until the configuration changes. The plan is not empty,
		// so that CI sees the failure rather than "No changes".
		diags.AddWarning("Release stalled: apply will fail",
			about(release.Kind, id, "release %s; %s. Change the configuration, or set a new reset_token, to try again.", state.Status.ValueString(), p.Stalled))
		plan.copyStatus(state)
		plan.Status = types.StringUnknown()
		return plan, diags
	}
	if action == release.ActionNone && state != nil {
		plan.copyStatus(state)
		if spec.ResetFailures || state.ConfigDigest.ValueString() != p.ConfigDigest {
			// A new configuration that the release already matches (the
			// values it was rolled back to): apply runs no Helm action but
			// records the new digest, and in its bookkeeping starts the
			// failure counters over, as a new generation does.
			plan.ConfigDigest = types.StringValue(p.ConfigDigest)
		}
		return plan, diags
	}
	if state != nil && p.Reason != "" && action != release.ActionUpgrade && action != release.ActionCorrect {
		// Remediation is not visible in any attribute but status: say it.
		diags.AddWarning("Release needs remediation",
			about(release.Kind, id, "apply will %s: %s", action, p.Reason))
	}
	planUnknown(&plan, meta, mode)
	if state != nil && p.KeepsFirstDeployed {
		plan.FirstDeployed = state.FirstDeployed
	}
	from := ""
	if state != nil {
		from = state.ApplyMethod.ValueString()
	}
	planApplyMethod(&plan, from, p, &diags)
	if pv := p.Preview; pv != nil {
		for _, w := range pv.Warnings {
			diags.AddWarning("Apply may fail", about(release.Kind, id, "%s", w))
		}
		diags.Append(takeoverWarning(id, pv)...)
		if pv.Unknown == "" {
			plan.Changes = driftValue(pv.Changes)
		}
	}
	if action == release.ActionCorrect && state != nil {
		// Drift correction creates no Helm revision: only drift changes.
		plan.copyStatus(state)
		plan.ConfigDigest = types.StringValue(p.ConfigDigest)
		plan.Drift = emptyDrift()
	}
	return plan, diags
}

// planSuspended plans a suspended release: nothing happens to it, so its
// computed attributes stay as refresh read them.
func (r *helmReleaseResource) planSuspended(ctx context.Context, plan, state *helmReleaseModel, resp *resource.ModifyPlanResponse) {
	id := plan.ID.ValueString()
	switch {
	case state == nil:
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot create a suspended release",
			about(release.Kind, id, "a suspended release is left alone, so it would never be installed: create it with suspend unset, "+
				"or import the release"))
		return
	case len(resp.RequiresReplace) > 0:
		resp.Diagnostics.AddAttributeError(path.Root("suspend"), "Cannot replace a suspended release",
			about(release.Kind, id, "this change replaces the release (uninstall, install), which a suspended release does not do: "+
				"unset suspend to apply it"))
		return
	}
	resp.Diagnostics.AddWarning("Release suspended",
		about(release.Kind, id, "suspend is set: apply leaves the release alone, and destroy leaves it installed"))
	plan.keepRelease(state)
	resp.Diagnostics.Append(setModel(ctx, &resp.Plan, plan)...)
}

// planChart resolves the chart the release will get. For an artifact's path
// it reads the archive's Chart.yaml (when the artifact exists already); for an
// inline chart it resolves the version constraint as the artifact resource
// does and takes the archive its source was built into (inlineArtifact), so
// that an unchanged inline chart plans no upgrade. ok is false after an error
// diagnostic.
func (r *helmReleaseResource) planChart(ctx context.Context, spec *release.Spec, plan *helmReleaseModel, resp *resource.ModifyPlanResponse) (*chart.Metadata, bool) {
	c := plan.Chart
	if c == nil {
		return nil, true
	}
	if !c.inline() {
		plan.ChartDigest = c.Digest
		if spec.ChartPath == "" {
			return nil, true
		}
		meta, err := chart.ReadMetadata(spec.ChartPath)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("chart").AtName("path"), "Cannot read the chart",
				about(release.Kind, plan.ID.ValueString(), "%v", err))
			return nil, false
		}
		return meta, true
	}
	plan.ChartDigest = types.StringUnknown()
	if r.configUnknown() {
		return nil, true
	}
	cspec, known, diags := r.inlineChartSpec(c)
	resp.Diagnostics.Append(diags...)
	if !known || diags.HasError() {
		return nil, !diags.HasError()
	}
	a, err := r.inlineArtifact(ctx, plan.ID.ValueString(), cspec, &resp.Diagnostics)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot fetch the chart", fielderr.Object(release.Kind, plan.ID.ValueString(), fielderr.Under("chart", err)))
		return nil, false
	}
	meta, err := chart.ReadMetadata(a.Path)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("chart"), "Cannot read the chart", about(release.Kind, plan.ID.ValueString(), "%v", err))
		return nil, false
	}
	spec.ChartPath, spec.ChartDigest = a.Path, a.Digest
	plan.ChartDigest = types.StringValue(a.Digest)
	return meta, true
}

// inlineArtifact is the archive of an inline chart at the version its
// constraint resolves to now. The engine plans from the chart itself, so an
// inline chart is fetched at plan, as source-controller fetches a chart before
// helm-controller sees it. An archive already in the cache is taken only when
// it was built from this very source (chart.Engine.Fetch: the source's
// identity, never the chart's name and version, which two sources may share),
// still matches its digest and its repository index, and, with verify, passed
// verification with this key material; anything else is fetched, and
// verified, again.
func (r *helmReleaseResource) inlineArtifact(ctx context.Context, id string, cspec chart.Spec, diags *diag.Diagnostics) (*chart.Artifact, error) {
	e := r.chartEngine()
	resolved, err := e.Resolve(ctx, cspec)
	if err != nil {
		return nil, err
	}
	staleWarning(diags, path.Root("chart").AtName("repository"), release.Kind, id, resolved)
	a, err := e.Fetch(ctx, cspec, resolved.Version)
	if err != nil {
		return nil, err
	}
	for _, w := range a.Warnings {
		diags.AddAttributeWarning(path.Root("chart"), "Chart cache not used", about(release.Kind, id, "%s", w))
	}
	if a.Unverified != "" {
		diags.AddAttributeWarning(path.Root("chart").AtName("verify"), "Chart used unverified", about(release.Kind, id, "%s", a.Unverified))
	}
	return a, nil
}

// planIdentity fills release_name, whose plan value is the configuration's
// here, with its default, and plans a replacement when it changes.
func (r *helmReleaseResource) planIdentity(spec *release.Spec, plan, state *helmReleaseModel, resp *resource.ModifyPlanResponse) {
	if plan.Name.IsUnknown() || plan.Namespace.IsUnknown() || plan.TargetNamespace.IsUnknown() || plan.ReleaseName.IsUnknown() {
		plan.ReleaseName = types.StringUnknown()
	} else {
		spec.ReleaseName = release.ReleaseName(spec)
		plan.ReleaseName = types.StringValue(spec.ReleaseName)
	}
	if state != nil && changed(plan.ReleaseName, state.ReleaseName) {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("release_name"))
	}
}

// planStorage fills storage_namespace, whose plan value is the
// configuration's here, and plans a replacement when it changes. It runs
// after every other decision to replace the release.
//
// Not configured, it defaults to namespace, as helm-controller stores a
// HelmRelease's releases in the HelmRelease's namespace. Releases made before
// that default were stored in their target namespace: so that no such state
// plans an uninstall and an install merely because the default changed, a
// resource that has state keeps the storage namespace of its state while
// storage_namespace is not configured. Setting it moves the release (a
// replace); a release replaced for another reason is a new release and takes
// the default.
func (r *helmReleaseResource) planStorage(spec *release.Spec, plan, state *helmReleaseModel, resp *resource.ModifyPlanResponse) {
	replacing := len(resp.RequiresReplace) > 0 || (state != nil && !plan.TargetNamespace.Equal(state.TargetNamespace))
	switch {
	case plan.StorageNamespace.IsUnknown():
	case !plan.StorageNamespace.IsNull():
		spec.StorageNamespace = plan.StorageNamespace.ValueString()
	case state != nil && !replacing && state.StorageNamespace.ValueString() != "":
		plan.StorageNamespace = state.StorageNamespace
		spec.StorageNamespace = state.StorageNamespace.ValueString()
	case plan.Namespace.IsUnknown():
		plan.StorageNamespace = types.StringUnknown()
	default:
		spec.StorageNamespace = release.StorageNamespace(spec)
		plan.StorageNamespace = types.StringValue(spec.StorageNamespace)
	}
	if state != nil && changed(plan.StorageNamespace, state.StorageNamespace) {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("storage_namespace"))
	}
}

// changed reports whether a known planned value differs from the state's
// (an empty state value is no release yet).
func changed(plan, state types.String) bool {
	return !plan.IsUnknown() && state.ValueString() != "" && state.ValueString() != plan.ValueString()
}

// planUnknown marks what apply will tell: the release's status and history.
func planUnknown(m *helmReleaseModel, meta *chart.Metadata, mode release.DriftMode) {
	// An apply that succeeds leaves the release deployed; one that fails
	// returns an error, and Terraform does not hold its state to the plan.
	m.Status = types.StringValue(release.StatusDeployed)
	m.Version = types.Int64Unknown()
	m.ChartName, m.ChartVersion, m.AppVersion = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	if meta != nil {
		m.ChartName, m.ChartVersion, m.AppVersion = types.StringValue(meta.Name), types.StringValue(meta.Version), types.StringValue(meta.AppVersion)
	}
	if m.ConfigDigest.IsNull() {
		m.ConfigDigest = types.StringUnknown()
	}
	if m.PostRenderersDigest.IsNull() {
		m.PostRenderersDigest = types.StringUnknown()
	}
	m.FirstDeployed, m.LastDeployed = types.StringUnknown(), types.StringUnknown()
	m.ApplyMethod = types.StringUnknown()
	m.Drift = types.ListUnknown(driftEntryType)
	m.Changes = types.ListUnknown(driftEntryType)
	if mode.Corrects() {
		// Apply ends with the release's objects as the chart renders them.
		m.Drift = emptyDrift()
	}
}

// driftSummary says which objects drifted, for warnings.
func driftSummary(l types.List) string {
	// driftFrom fails only on a list that is not of the drift attribute's
	// type; l is the state's own, which the framework read with that type.
	drift, _ := driftFrom(context.Background(), l)
	ids := make([]string, 0, len(drift))
	for _, d := range drift {
		ids = append(ids, d.ID+" ("+d.Type+")")
	}
	return strconv.Itoa(len(drift)) + " object(s) differ from the release: " + strings.Join(ids, ", ")
}

// warnCreateConflict warns, at the plan of a create whose chart or values
// are not known yet, about a release of its name in storage, as soon as the
// names that find it are known.
func (r *helmReleaseResource) warnCreateConflict(ctx context.Context, plan *helmReleaseModel, resp *resource.ModifyPlanResponse) {
	b := newSpecBuilder()
	spec := b.release(ctx, plan)
	if slices.ContainsFunc([]string{"name", "namespace", "release_name", "target_namespace", "storage_namespace", "service_account_name"}, b.isUnknown) {
		return
	}
	if c, err := r.engine().CreateConflict(ctx, spec); err == nil && c != nil {
		addWarning(&resp.Diagnostics, "Release already exists", fielderr.Object(release.Kind, plan.ID.ValueString(), &release.ConflictWarning{Exists: c}))
	}
}
