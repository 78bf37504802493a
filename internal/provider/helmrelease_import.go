package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	name, storageNS := id.Release()
	imp, err := r.engine().Import(ctx, storageNS, name)
	if err != nil {
		var nf *release.NotFoundError
		if errors.As(err, &nf) {
			err = fmt.Errorf("%w%s", err, r.importHint(ctx, id))
		}
		addError(&resp.Diagnostics, "Cannot import the release", err)
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
			addError(&resp.Diagnostics, "Cannot import the release values", fielderr.Object("release", storageNS+"/"+name, err))
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
