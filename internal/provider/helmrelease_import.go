package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// ImportState reads a running release, whoever installed it. The ID names
// the HelmRelease as a Flux user knows it, `<namespace>/<name>[@<target_namespace>]`,
// with the release name and storage namespace Flux's rules give, or names
// them explicitly (`,release_name=...,storage_namespace=...`; see
// release.ImportID). Its values are the release's user-supplied values, and
// its chart what a user would write for it (importedChart), since `plan
// -generate-config-out` writes the block from this state.
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
		addError(&resp.Diagnostics, "Invalid import ID", err)
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
	m, imp, id, diags := r.importRelease(ctx, id, req.ID, byIdentity)
	if resp.Diagnostics.Append(diags...); resp.Diagnostics.HasError() {
		return
	}
	if byIdentity {
		// An import block by identity, which `terraform query
		// -generate-config-out` writes for every release it lists, cannot
		// tell another configuration's release from a killed apply's of
		// this one: it never adopts another instance's release.
		if owned := imp.OwnedError(id.String()); owned != nil {
			addError(&resp.Diagnostics, "Cannot import the release", owned)
			return
		}
	}
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

// importRelease reads the release id names as an import reads it: the
// model its state is, with what the release records (the chart a user
// writes, importedChart). reqID is the import ID as given ("" for an
// identity, whose ID is then completed from the release found,
// importedFrom), and the ID it returns is the completed one. Its warnings say what the chart block lacks. The import
// and the list resource (terraform query) read a release with it.
func (r *helmReleaseResource) importRelease(ctx context.Context, id release.ImportID, reqID string, byIdentity bool) (helmReleaseModel, *release.Imported, release.ImportID, diag.Diagnostics) {
	var diags diag.Diagnostics
	name, storageNS := id.Release()
	imp, err := r.engine().Import(ctx, storageNS, name)
	if err != nil {
		var nf *release.NotFoundError
		if errors.As(err, &nf) {
			err = fmt.Errorf("%w%s", err, r.importHint(ctx, id))
		}
		addError(&diags, "Cannot import the release", err)
		return helmReleaseModel{}, nil, id, diags
	}
	if byIdentity {
		id = importedFrom(id, imp.TargetNamespace)
	}
	if objs := id.ReleaseNamespace(); imp.TargetNamespace != objs {
		diags.AddError("Invalid import ID",
			fmt.Sprintf("import ID %q: release %s in storage namespace %s has its objects in namespace %s, not in %s: import it as %q",
				reqID, name, storageNS, imp.TargetNamespace, objs, release.ImportIDOf(importIDSpec(ctx, id), name, storageNS, imp.TargetNamespace)))
		return helmReleaseModel{}, nil, id, diags
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
			addError(&diags, "Cannot import the release values", fielderr.Object("release", storageNS+"/"+name, err))
			return helmReleaseModel{}, nil, id, diags
		}
		m.Values = types.DynamicValue(v)
	}
	m.setStatus(imp.Status)
	m.ID = types.StringValue(id.Namespace + "/" + id.Name)
	if w := r.importedChart(ctx, &m, imp, id); w != "" {
		diags.AddAttributeWarning(path.Root("chart"), "Write the chart's source", w)
	}
	m.Drift = emptyDrift()
	m.Changes = types.ListNull(driftEntryType)
	return m, imp, id, diags
}

// importedChart sets m's chart to what a user would write for the
// imported release, as `plan -generate-config-out` writes it from the
// state: never a path of this machine's cache. The chart is, in this order:
//   - the inline source of the Flux HelmRelease that made the release, read
//     from it and its source objects in the cluster (FluxChartSource);
//   - the inline source the cache recorded for the archive Helm recorded,
//     when the cache proves that archive (provenArchive) and records exactly
//     one remote source of it;
//   - the archive's digest, when the cache proves it: it applies on this
//     machine only.
//
// The release's version is always the one Helm recorded. The warning, ""
// when an inline source was found with nothing left to write, says which
// attributes to write and why.
func (r *helmReleaseResource) importedChart(ctx context.Context, m *helmReleaseModel, imp *release.Imported, id release.ImportID) string {
	m.Chart = nullReleaseChart()
	name, version := imp.Status.ChartName, imp.Status.ChartVersion
	var proven *chart.CachedArchive
	if r.data.cacheDir != "" {
		if a, ok := provenArchive(r.chartEngine(), imp); ok {
			proven = &a
			m.ChartDigest = types.StringValue(a.Digest)
		}
	}
	inline := func(repository string) {
		m.Chart.Repository, m.Chart.Chart, m.Chart.Version = types.StringValue(repository), types.StringValue(name), types.StringValue(version)
	}
	src, fluxWhy := r.engine().FluxChartSource(ctx, id.Namespace, id.Name, imp)
	if src != nil {
		inline(src.Repository)
		if len(src.Notes) == 0 {
			return ""
		}
		return fmt.Sprintf("release %s: the chart block is the source of %s; it does not carry over: %s.",
			imp.Status.ReleaseName, src.From, strings.Join(src.Notes, "; "))
	}
	write := fmt.Sprintf("chart.repository (the Helm or OCI repository that serves it), chart.chart = %q and chart.version = %q", name, version)
	origin := fmt.Sprintf("release %s was installed from chart %s version %s, and Helm does not record where the chart came from",
		imp.Status.ReleaseName, name, version)
	if fluxWhy != "" {
		origin += " (" + fluxWhy + ")"
	}
	if r.data.cacheDir == "" {
		return fmt.Sprintf("%s: the imported chart block is empty; write %s.", origin, write)
	}
	if proven == nil {
		why := "no archive of that name and version"
		if cs := r.chartEngine().Candidates(name, version); len(cs) > 0 {
			why = fmt.Sprintf("%d archive(s) of that name and version, not exactly one proven by content to be the one Helm recorded", len(cs))
			if err := imp.ChartIs(cs[0].Path); err != nil {
				why += " (" + err.Error() + ")"
			}
		}
		return fmt.Sprintf("%s; the provider's cache (%s) holds %s: the imported chart block is empty; write %s.",
			origin, r.data.cacheDir, why, write)
	}
	if src := r.chartEngine().SourcesOf(proven.Digest); len(src) == 1 && src[0].Chart == name && src[0].Version == version {
		inline(src[0].Repository)
		return ""
	}
	m.Chart.Digest = types.StringValue(proven.Digest)
	return fmt.Sprintf("%s. The chart block names the archive by digest (%s): this machine's cache holds the very archive Helm "+
		"recorded, so the configuration applies here unchanged, but not on a machine whose cache does not hold it (a CI runner). "+
		"For those, replace chart.digest with %s.", origin, proven.Digest, write)
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
