package provider

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
	addError(&resp.Diagnostics, "Invalid post-renderer", release.ValidatePostRenderers(spec.PostRenderers))
	if d := m.DriftDetection; d != nil {
		addError(&resp.Diagnostics, "Invalid drift ignore rule", release.ValidateIgnoreRules(spec.DriftDetection.Ignore))
	}
	validateDependencies(&resp.Diagnostics, m.Dependencies)
	warnForceUnderSSA(&resp.Diagnostics, spec)
	validateRenderFields(&resp.Diagnostics, &m, spec)
	addError(&resp.Diagnostics, "Invalid release field", release.ValidateReleaseFields(spec))
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
