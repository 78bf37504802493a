package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// NewHelmReleaseResource is the stevedore_helmrelease resource.
func NewHelmReleaseResource() resource.Resource { return &helmReleaseResource{} }

type helmReleaseResource struct {
	data *providerData
}

var (
	_ resource.ResourceWithConfigure      = (*helmReleaseResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*helmReleaseResource)(nil)
	_ resource.ResourceWithValidateConfig = (*helmReleaseResource)(nil)
	_ resource.ResourceWithImportState    = (*helmReleaseResource)(nil)
	_ resource.ResourceWithUpgradeState   = (*helmReleaseResource)(nil)
)

func (r *helmReleaseResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_helmrelease"
}

func (r *helmReleaseResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = helmReleaseSchema()
}

func (r *helmReleaseResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req, resp)
}

func (r *helmReleaseResource) engine() *release.Engine { return r.data.releases }

// configUnknown says the provider configuration is not known yet (plan of a
// cluster made in the same apply): nothing can be read.
func (r *helmReleaseResource) configUnknown() bool { return r.data == nil || r.data.unknown }

// ValidateConfig checks what needs no cluster: values that are no mapping,
// post-renderer patches that do not parse, ignore rules whose pointers or
// selectors are malformed, the chart block.
func (r *helmReleaseResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m helmReleaseModel
	resp.Diagnostics.Append(getModel(ctx, req.Config, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateReleaseChart(m.Chart)...)
	spec, _, diags := helmReleaseSpec(ctx, &m)
	resp.Diagnostics.Append(diags...)
	if spec == nil {
		return
	}
	// Each check skips what it cannot see yet (unknown values are empty here).
	addReleaseDiag(&resp.Diagnostics, "Invalid post-renderer", release.ValidatePostRenderers(spec.PostRenderers))
	if d := m.DriftDetection; d != nil {
		addReleaseDiag(&resp.Diagnostics, "Invalid drift ignore rule", release.ValidateIgnoreRules(spec.DriftDetection.Ignore))
	}
	validateDependencies(&resp.Diagnostics, m.Dependencies)
}

// validateReleaseChart checks which of the chart block's sources is set:
// exactly one of path (with digest), repository (with chart) and source_path.
// A value not known yet (an artifact's path before it exists) counts as set,
// so that nothing is reported that the apply could prove wrong.
func validateReleaseChart(c *releaseChartModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if c == nil {
		return diags // the block's own validator reports it missing
	}
	chartPath := path.Root("chart")
	var set []string
	for _, a := range []struct {
		name string
		v    types.String
	}{{"digest", artifactRef(c)}, {"repository", c.Repository}, {"source_path", c.SourcePath}} {
		if !a.v.IsNull() {
			set = append(set, "chart."+a.name)
		}
	}
	switch len(set) {
	case 0:
		diags.AddAttributeError(chartPath, "Missing chart source",
			"the chart block needs exactly one of chart.digest (from a stevedore_helmchart_artifact), chart.repository and chart.source_path")
	case 1:
	default:
		diags.AddAttributeError(chartPath.AtName(strings.TrimPrefix(set[1], "chart.")), "Conflicting chart sources",
			fmt.Sprintf("%s are set: the chart block takes exactly one of chart.digest, chart.repository and chart.source_path", strings.Join(set, " and ")))
	}
	if !c.Path.IsNull() && c.Digest.IsNull() {
		diags.AddAttributeError(chartPath.AtName("digest"), "Missing chart digest",
			"chart.digest is required with chart.path: stevedore_helmchart_artifact.<name>.digest")
	}
	if !c.Repository.IsNull() && c.Chart.IsNull() {
		diags.AddAttributeError(chartPath.AtName("chart"), "Missing chart name",
			"chart.chart is required with chart.repository: the name of the chart in the repository")
	}
	return diags
}

// artifactRef is what says the chart is an artifact's: its digest, or a path
// (whose missing digest is its own error).
func artifactRef(c *releaseChartModel) types.String {
	if c.Digest.IsNull() {
		return c.Path
	}
	return c.Digest
}

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
		addReleaseDiag(&resp.Diagnostics, "Cannot find the chart", fielderr.Object(release.Kind, plan.ID.ValueString(), err))
		return
	} else if !found {
		known = false
	}
	setTriggers(ctx, spec, state, &plan)
	if !plan.Name.IsUnknown() && !plan.Namespace.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}
	r.planIdentity(spec, &plan, state, resp)

	// The chart's own metadata: a new name replaces the release, a new
	// version is shown as such.
	meta, ok := r.planChart(ctx, spec, &plan, resp)
	if !ok {
		return
	}
	if meta != nil && state != nil && state.ChartName.ValueString() != "" && state.ChartName.ValueString() != meta.Name {
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("chart"))
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
		r.planUnknown(&plan, meta, mode)
		resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
		return
	}

	prev, diags := prevStatus(ctx, state)
	resp.Diagnostics.Append(diags...)
	p, err := r.engine().Plan(ctx, spec, prev)
	if err != nil {
		addReleaseDiag(&resp.Diagnostics, "Cannot plan the release", err)
		return
	}
	if p.ValuesMissing != "" {
		resp.Diagnostics.AddAttributeWarning(path.Root("values_from"), "Values not found: apply may fail",
			fmt.Sprintf("%s: another resource may create it before this one is applied; apply fails if it is still missing", p.ValuesMissing))
		plan.ConfigDigest = types.StringUnknown()
		r.planUnknown(&plan, meta, mode)
		resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
		return
	}
	plan.ConfigDigest = types.StringValue(p.ConfigDigest)
	plan.PostRenderersDigest = types.StringValue(p.PostRenderersDigest)
	if p.Conflict != nil {
		addConflictWarning(&resp.Diagnostics, plan.ID.ValueString(), p.Conflict)
	}

	if p.ChangedOutside != "" {
		resp.Diagnostics.AddWarning("Release changed outside stevedore", about(release.Kind, plan.ID.ValueString(), "%s", p.ChangedOutside))
	}

	action := p.Action
	if p.Stalled != "" && state != nil {
		// Remediation is out of retries: apply fails, as it did, and keeps
		// failing until the configuration changes. The plan is not empty,
		// so that CI sees the failure rather than "No changes".
		resp.Diagnostics.AddWarning("Release stalled: apply will fail",
			about(release.Kind, plan.ID.ValueString(), "release %s; %s. Change the configuration, or set a new reset_token, to try again.", state.Status.ValueString(), p.Stalled))
		plan.copyStatus(state)
		plan.Status = types.StringUnknown()
		resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
		return
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
		resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
		return
	}
	if state != nil && p.Reason != "" && action != release.ActionUpgrade && action != release.ActionCorrect {
		// Remediation is not visible in any attribute but status: say it.
		resp.Diagnostics.AddWarning("Release needs remediation",
			about(release.Kind, plan.ID.ValueString(), "apply will %s: %s", action, p.Reason))
	}
	r.planUnknown(&plan, meta, mode)
	if state != nil && p.KeepsFirstDeployed {
		plan.FirstDeployed = state.FirstDeployed
	}
	from := ""
	if state != nil {
		from = state.ApplyMethod.ValueString()
	}
	planApplyMethod(&plan, from, p, &resp.Diagnostics)
	if pv := p.Preview; pv != nil {
		for _, w := range pv.Warnings {
			resp.Diagnostics.AddWarning("Apply may fail", about(release.Kind, plan.ID.ValueString(), "%s", w))
		}
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
	resp.Diagnostics.Append(setModel(ctx, &resp.Plan, &plan)...)
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
		chartDiag(&resp.Diagnostics, "Cannot fetch the chart", plan, err)
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
func (r *helmReleaseResource) planUnknown(m *helmReleaseModel, meta *chart.Metadata, mode release.DriftMode) {
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
		addReleaseDiag(&diags, "Cannot read the release history", fielderr.Object(release.Kind, m.ID.ValueString(), err))
		return false, diags
	default:
		m.Book = bookOf(imp.Status)
	}
	return true, diags
}

// keepRelease is copyStatus for a suspended release, which no apply touches:
// the chart digest too stays what the release was installed with.
func (m *helmReleaseModel) keepRelease(s *helmReleaseModel) {
	m.copyStatus(s)
	m.ChartDigest = s.ChartDigest
}

func emptyDrift() types.List { return types.ListValueMust(driftEntryType, nil) }

// copyStatus copies the computed attributes of the release from the state,
// for a plan in which apply makes no Helm release. The chart digest is not
// one of them: every apply records the digest of the chart it is given
// (planChart plans it), also over an imported release whose digest was
// unknown. The post-renderers digest is that of the last release made, so it
// stays.
func (m *helmReleaseModel) copyStatus(s *helmReleaseModel) {
	m.ReleaseName, m.StorageNamespace = s.ReleaseName, s.StorageNamespace
	m.Status, m.Version = s.Status, s.Version
	m.ChartName, m.ChartVersion, m.AppVersion = s.ChartName, s.ChartVersion, s.AppVersion
	m.ConfigDigest, m.PostRenderersDigest = s.ConfigDigest, s.PostRenderersDigest
	m.FirstDeployed, m.LastDeployed = s.FirstDeployed, s.LastDeployed
	m.ApplyMethod = s.ApplyMethod
	m.Book = s.Book
	m.Drift = s.Drift
	m.Changes = s.Changes
}

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
		addReleaseDiag(diags, "Cannot find the chart", fielderr.Object(release.Kind, m.ID.ValueString(), err))
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
	if m.Chart.inline() && !r.buildInlineChart(ctx, m, spec, diags) {
		return false, nil
	}

	status, err := r.engine().Reconcile(ctx, spec, prev)
	if status == nil {
		if err == nil {
			err = errors.New("the engine returned no status")
		}
		addReleaseDiag(diags, "Release failed", err)
		return false, nil
	}
	m.setStatus(status)
	if err != nil {
		addReleaseDiag(diags, "Release failed", err)
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
		addReleaseDiag(&resp.Diagnostics, "Cannot read the release", err)
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
		addReleaseDiag(&resp.Diagnostics, "Uninstall failed", err)
	case kept != "":
		resp.Diagnostics.AddWarning("Objects left in the cluster",
			about(release.Kind, state.ID.ValueString(), "Helm uninstalled release %s and left these objects, which destroy does not delete:\n%s", state.ReleaseName.ValueString(), kept))
	}
}

// ImportState reads a running release, whoever installed it. The ID names
// the HelmRelease as a Flux user knows it, `<namespace>/<name>[@<target_namespace>]`,
// with the release name and storage namespace Flux's rules give, or names
// them explicitly (`,release_name=...,storage_namespace=...`; see
// release.ImportID). Its values are the release's user-supplied values, and
// the chart is found in the provider's artifact cache when exactly one
// artifact there has the release's chart name and version, so that a
// configuration that matches the running release plans nothing after the
// import.
//
// An import block's identity (namespace, release_name) names the release as
// Helm locates it; the resource's namespace is then the storage namespace,
// its objects' namespace gives the target namespace, and the release name
// the name (importedFrom).
func (r *helmReleaseResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	byIdentity := req.ID == "" && req.Identity != nil
	var id release.ImportID
	if byIdentity {
		var diags diag.Diagnostics
		id, diags = releaseImportIdentity(ctx, req.Identity)
		resp.Diagnostics.Append(diags...)
	} else if parsed, err := release.ParseImportID(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import ID", err.Error())
	} else {
		id = parsed
	}
	if resp.Diagnostics.HasError() {
		return
	}
	if r.configUnknown() {
		resp.Diagnostics.AddError("Provider not configured", "import needs a known provider configuration")
		return
	}
	name, storageNS := id.Release()
	imp, err := r.engine().Import(ctx, storageNS, name)
	if err != nil {
		var nf *release.NotFoundError
		if errors.As(err, &nf) {
			err = fmt.Errorf("%w%s", err, r.importHint(ctx, id))
		}
		addReleaseDiag(&resp.Diagnostics, "Cannot import the release", err)
		return
	}
	if byIdentity {
		id = importedFrom(id, imp.TargetNamespace)
	}
	if objs := id.ReleaseNamespace(); imp.TargetNamespace != objs {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("import ID %q: release %s in storage namespace %s has its objects in namespace %s, not in %s: import it as %q",
				req.ID, name, storageNS, imp.TargetNamespace, objs, release.ImportIDOf(importIDSpec(ctx, id), name, storageNS, imp.TargetNamespace)))
		return
	}
	m := importedModel(id)
	if imp.Description != "" {
		// Only a description of the user's: Helm's own text, read back,
		// would plan an upgrade to remove it from a configuration without
		// one (setTriggers).
		m.Description = types.StringValue(imp.Description)
	}
	if len(imp.Values) > 0 {
		v, err := tfValue(imp.Values)
		if err != nil {
			resp.Diagnostics.AddError("Cannot import the release values", fmt.Sprintf("release %s/%s: %v", storageNS, name, err))
			return
		}
		m.Values = types.DynamicValue(v)
	}
	m.setStatus(imp.Status)
	m.ID = types.StringValue(id.Namespace + "/" + id.Name)
	m.Chart = nullReleaseChart()
	if r.data.cacheDir != "" {
		if a, ok := provenArchive(r.chartEngine(), imp); ok {
			m.Chart.Path, m.Chart.Digest, m.ChartDigest = types.StringValue(a.Path), types.StringValue(a.Digest), types.StringValue(a.Digest)
		}
	}
	m.Drift = emptyDrift()
	m.Changes = types.ListNull(driftEntryType)
	resp.Diagnostics.Append(setModel(ctx, &resp.State, &m)...)
	resp.Diagnostics.Append(setReleaseIdentity(ctx, resp.Identity, &m)...)
	// The import is the user saying "this release is this resource's": the
	// instance takes the owner the release records, or a new one that its
	// next upgrade records.
	owner := imp.Owner
	if owner == "" {
		owner = kube.NewOwnerID()
	}
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, owner)...)
	resp.Diagnostics.Append(writeBook(ctx, resp.Private, m.Book)...)
}

// importedModel is the configuration an import ID stands for: the name,
// namespace and target namespace it gives, and nothing else.
func importedModel(id release.ImportID) helmReleaseModel {
	m := helmReleaseModel{
		Name: types.StringValue(id.Name), Namespace: types.StringValue(id.Namespace),
		TargetNamespace: types.StringNull(), ServiceAccountName: types.StringNull(), MaxHistory: types.Int64Null(),
		Timeout: types.StringNull(), PersistentClient: types.BoolNull(), Values: types.DynamicNull(),
		Set: types.ListNull(setEntryType), SetList: types.ListNull(setListEntryType), SetSensitive: types.ListNull(setEntryType),
		Description: types.StringNull(),
	}
	if id.TargetNamespace != "" {
		m.TargetNamespace = types.StringValue(id.TargetNamespace)
	}
	return m
}

// importIDSpec is the spec of the configuration an import ID stands for,
// from which release.ImportIDOf writes the ID of another release.
func importIDSpec(ctx context.Context, id release.ImportID) *release.Spec {
	m := importedModel(id)
	spec, _, _ := helmReleaseSpec(ctx, &m)
	return spec
}

// provenArchive is the archive in the cache that the imported release was
// made from, proven by content: of the archives whose file name says the
// release's chart name and version (candidates only, since two sources may
// serve different archives under one name and version), the one whose files
// are those Helm recorded in the release (release.Imported.ChartIs). ok is
// false unless exactly one digest is proven: the state then names no archive,
// and the first plan resolves the configuration's chart as a new one would.
func provenArchive(ce *chart.Engine, imp *release.Imported) (chart.CachedArchive, bool) {
	var proven []chart.CachedArchive
	for _, c := range ce.Candidates(imp.Status.ChartName, imp.Status.ChartVersion) {
		if imp.ChartIs(c.Path) == nil && !slices.ContainsFunc(proven, func(p chart.CachedArchive) bool { return p.Digest == c.Digest }) {
			proven = append(proven, c)
		}
	}
	if len(proven) != 1 {
		return chart.CachedArchive{}, false
	}
	return proven[0], true
}

// importHint explains an ID that names no release when it is one that meant
// another release before import IDs named the HelmRelease: `ns/name@target`
// used to be release name in storage ns. It is empty otherwise.
func (r *helmReleaseResource) importHint(ctx context.Context, id release.ImportID) string {
	if id.TargetNamespace == "" || id.ReleaseName != "" {
		return ""
	}
	_, storageNS := id.Release()
	imp, err := r.engine().Import(ctx, storageNS, id.Name)
	if err != nil {
		return ""
	}
	alt := release.ImportIDOf(importIDSpec(ctx, id), id.Name, storageNS, imp.TargetNamespace)
	return fmt.Sprintf(". The ID names the HelmRelease as Flux does, whose release is <target_namespace>-<name>; "+
		"release %q in storage namespace %s is imported with the ID %q", id.Name, storageNS, alt)
}

// chartOnThisMachine points spec at its chart archive on this machine when
// chart.path names none here. A chart may be given by digest alone; an
// artifact's path is known at apply only when the plan built it; and state or
// a saved plan may carry the path of another machine's cache directory. The
// digest names the same bytes everywhere, so the archive is found by digest in
// this machine's cache, where the artifact resource puts it at plan, refresh
// and apply. It reports false when the archive is not found and the path is
// unknown (the plan cannot see the chart yet), or null (then with an error on
// chart.digest). A known path that names nothing is left for the engine to
// report under chart.path.
func (r *helmReleaseResource) chartOnThisMachine(spec *release.Spec, c *releaseChartModel) (bool, error) {
	if spec.ChartDigest == "" || c == nil || c.inline() {
		return true, nil
	}
	if spec.ChartPath != "" {
		if _, err := os.Stat(spec.ChartPath); err == nil {
			return true, nil
		}
	}
	if !r.configUnknown() {
		if p, ok := r.chartEngine().Locate(spec.ChartDigest); ok {
			spec.ChartPath = p
			return true, nil
		}
	}
	switch {
	case spec.ChartPath != "":
		return true, nil
	case c.Path.IsUnknown() || r.configUnknown():
		return false, nil
	}
	return false, &fielderr.Error{Path: "chart.digest", Err: fmt.Errorf("no chart archive with digest %s in the provider's cache (%s): "+
		"take chart.digest from a stevedore_helmchart_artifact of this configuration, which puts its archive there, or set chart.path "+
		"to an archive of your own", spec.ChartDigest, r.data.cacheDir)}
}

func (r *helmReleaseResource) chartEngine() *chart.Engine { return r.data.charts }

// inlineChartSpec is the chart engine's spec of an inline chart, with the
// provider's registries, exactly as the artifact resource builds it.
func (r *helmReleaseResource) inlineChartSpec(c *releaseChartModel) (chart.Spec, bool, diag.Diagnostics) {
	b := newSpecBuilder()
	spec := c.chartSpec(b.under("chart"), r.data)
	known, diags := b.result()
	return spec, known, diags
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
		chartDiag(diags, "Cannot fetch the chart", m, err)
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

// chartDiag is an error of the chart engine about the release's chart
// block: its attributes are under `chart`.
func chartDiag(diags *diag.Diagnostics, summary string, m *helmReleaseModel, err error) {
	addError(diags, summary, fielderr.Object(release.Kind, m.ID.ValueString(), fielderr.Under("chart", err)))
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

// addReleaseDiag attaches an engine error to the attribute it is about.
func addReleaseDiag(diags *diag.Diagnostics, summary string, err error) {
	var exists *release.ExistsError
	var notReady *kube.DependencyNotReadyError
	switch {
	case errors.As(err, &exists):
		diags.AddAttributeError(path.Root("release_name"), "Release already exists", err.Error()+". "+importAdvice(exists))
	case errors.As(err, &notReady):
		diags.AddError("Dependencies not ready", err.Error()+
			". The release was not installed or upgraded, and no failure was counted: apply again once they are met.")
	default:
		addError(diags, summary, err)
	}
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
		addConflictWarning(&resp.Diagnostics, plan.ID.ValueString(), c)
	}
}

// addConflictWarning says, at the plan of a create, what apply will do with
// a release of the same name that is already in storage. Terraform plans the
// replacement of a tainted resource (one whose create failed) as a create,
// so the plan cannot tell it from a new resource: the warning says what
// happens in either case, and what the plan line says tells them apart.
func addConflictWarning(diags *diag.Diagnostics, id string, e *release.ExistsError) {
	diags.AddWarning("Release already exists",
		about(release.Kind, id, "%v. Apply refuses to create this resource over it and changes nothing, "+
			"unless Terraform replaces this resource (the plan says it \"must be replaced\"): then the resource's destroy "+
			"uninstalls its release first. %s", e, importAdvice(e)))
}

// importAdvice says how to import the release e found, with the import ID
// ImportState reads.
func importAdvice(e *release.ExistsError) string {
	id := e.ImportID
	return fmt.Sprintf("To manage it with this resource, import it (an import block, or terraform import) with the ID %q; "+
		"to install another release, choose another release_name.", id)
}
