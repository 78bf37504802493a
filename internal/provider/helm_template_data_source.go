package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// NewHelmTemplateDataSource is the stevedore_helm_template data source.
func NewHelmTemplateDataSource() datasource.DataSource { return &helmTemplateDataSource{} }

// helmTemplateDataSource renders a chart without a cluster: it never uses
// the provider's kubernetes configuration, only the chart cache and
// registries an inline chart needs.
type helmTemplateDataSource struct {
	data *providerData
}

var (
	_ datasource.DataSourceWithConfigure      = (*helmTemplateDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*helmTemplateDataSource)(nil)
)

type helmTemplateModel struct {
	ReleaseName   types.String        `tfsdk:"release_name"`
	Namespace     types.String        `tfsdk:"namespace"`
	Values        types.Dynamic       `tfsdk:"values"`
	Set           types.List          `tfsdk:"set"`
	SetList       types.List          `tfsdk:"set_list"`
	SetSensitive  types.List          `tfsdk:"set_sensitive"`
	KubeVersion   types.String        `tfsdk:"kube_version"`
	APIVersions   types.List          `tfsdk:"api_versions"`
	IncludeCRDs   types.Bool          `tfsdk:"include_crds"`
	SkipTests     types.Bool          `tfsdk:"skip_tests"`
	Chart         *releaseChartModel  `tfsdk:"chart"`
	PostRenderers []postRendererModel `tfsdk:"post_renderers"`
	// PostRenderStrategy is the release's post_render_strategy.
	PostRenderStrategy types.String `tfsdk:"post_render_strategy"`
	// CommonMetadata is the release's common_metadata.
	CommonMetadata *commonMetadataModel `tfsdk:"common_metadata"`
	// DisableSchemaValidation is the release's
	// install.disable_schema_validation: a template renders as the install.
	DisableSchemaValidation types.Bool `tfsdk:"disable_schema_validation"`

	Objects      types.List   `tfsdk:"objects"`
	Manifest     types.String `tfsdk:"manifest"`
	Notes        types.String `tfsdk:"notes"`
	ChartName    types.String `tfsdk:"chart_name"`
	ChartVersion types.String `tfsdk:"chart_version"`
	AppVersion   types.String `tfsdk:"app_version"`
	ChartDigest  types.String `tfsdk:"chart_digest"`
	ConfigDigest types.String `tfsdk:"config_digest"`
}

func (d *helmTemplateDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_helm_template"
}

func (d *helmTemplateDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = helmTemplateSchema()
}

func (d *helmTemplateDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataOf(req.ProviderData, &resp.Diagnostics)
}

// releaseModel is the stevedore_helmrelease configuration m renders as:
// the release's own conversion of chart, values, sets, post-renderers and
// common_metadata makes the engine's spec, so that the sets are parsed,
// merged in the same order and refused with the same diagnostics
// (`set[1].name`) as the release's. The template is Helm's install action,
// so disable_schema_validation is the release's
// install.disable_schema_validation.
func (m *helmTemplateModel) releaseModel() *helmReleaseModel {
	return &helmReleaseModel{
		Name: m.ReleaseName, Namespace: m.Namespace, ReleaseName: m.ReleaseName,
		Values: m.Values, Set: m.Set, SetList: m.SetList, SetSensitive: m.SetSensitive,
		Chart: m.Chart, PostRenderers: m.PostRenderers, PostRenderStrategy: m.PostRenderStrategy,
		CommonMetadata: m.CommonMetadata,
		Install:        &installModel{DisableSchemaValidation: m.DisableSchemaValidation},
	}
}

// ValidateConfig checks what the release's ValidateConfig checks of the
// same attributes: the chart block's sources, the values, the post-renderers,
// common_metadata.
func (d *helmTemplateDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m helmTemplateModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Chart == nil {
		return // the block's own validator reports it missing
	}
	resp.Diagnostics.Append(validateReleaseChart(m.Chart)...)
	spec, _, diags := helmReleaseSpec(ctx, m.releaseModel())
	resp.Diagnostics.Append(diags...)
	if spec != nil {
		addError(&resp.Diagnostics, "Invalid post-renderer", release.ValidatePostRenderers(spec.PostRenderers))
		validateRenderFields(&resp.Diagnostics, m.releaseModel(), spec)
	}
}

func (d *helmTemplateDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m helmTemplateModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, known, diags := helmReleaseSpec(ctx, m.releaseModel())
	resp.Diagnostics.Append(diags...)
	if !known && !resp.Diagnostics.HasError() {
		// Terraform reads a data source only once its configuration is known.
		resp.Diagnostics.AddError("Unknown values", "a value of the configuration is not known yet")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	id := m.Namespace.ValueString() + "/" + m.ReleaseName.ValueString()
	if m.Chart.inline() && !d.fetchInlineChart(ctx, id, m.Chart, spec, &resp.Diagnostics) {
		return
	}
	if !m.Chart.inline() {
		// An artifact named by digest alone, or a path this machine lacks:
		// its archive by digest in the provider's cache, as the release finds it.
		if _, err := (&helmReleaseResource{data: d.data}).chartOnThisMachine(spec, m.Chart); err != nil {
			addError(&resp.Diagnostics, "Cannot find the chart", fielderr.Object("helm_template", id, err))
			return
		}
	}
	b := newSpecBuilder()
	opts := release.TemplateOptions{
		KubeVersion: b.str("kube_version", m.KubeVersion),
		APIVersions: b.strings("api_versions", m.APIVersions),
		IncludeCRDs: b.boolean("include_crds", m.IncludeCRDs),
		SkipTests:   b.boolean("skip_tests", m.SkipTests),
	}
	if resp.Diagnostics.Append(b.diags...); resp.Diagnostics.HasError() {
		return
	}
	spec.Helm3Defaults = d.data.helm3Defaults
	out, err := release.Template(ctx, spec, opts)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot render the chart", fielderr.Object("helm_template", id, err))
		return
	}
	objs := make([]renderedObject, len(out.Objects))
	for i, o := range out.Objects {
		objs[i] = renderedObject{obj: o.Object, manifest: o.Manifest}
	}
	m.Objects = renderedObjectsValue(objs)
	m.Manifest = types.StringValue(out.Manifest)
	m.Notes = types.StringValue(out.Notes)
	m.ChartName = types.StringValue(out.ChartName)
	m.ChartVersion = types.StringValue(out.ChartVersion)
	m.AppVersion = types.StringValue(out.AppVersion)
	m.ChartDigest = types.StringValue(spec.ChartDigest)
	m.ConfigDigest = types.StringValue(out.ConfigDigest)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// fetchInlineChart resolves, fetches and verifies an inline chart into the
// cache as the release does at plan, and points spec at the archive.
func (d *helmTemplateDataSource) fetchInlineChart(ctx context.Context, id string, c *releaseChartModel, spec *release.Spec, diags *diag.Diagnostics) bool {
	if d.data == nil {
		diags.AddError("Provider not configured", "an inline chart needs the provider's configuration (cache_dir, registries)")
		return false
	}
	r := &helmReleaseResource{data: d.data}
	cspec, known, ds := r.inlineChartSpec(c)
	diags.Append(ds...)
	if !known && !diags.HasError() {
		diags.AddAttributeError(path.Root("chart"), "Unknown values", "a chart attribute is not known yet")
	}
	if diags.HasError() {
		return false
	}
	a, err := r.inlineArtifact(ctx, id, cspec, diags)
	if err != nil {
		addError(diags, "Cannot fetch the chart", fielderr.Object("helm_template", id, fielderr.Under("chart", err)))
		return false
	}
	spec.ChartPath, spec.ChartDigest = a.Path, a.Digest
	return true
}

// renderedObject is an object of a render, with the manifest it is shown as.
type renderedObject struct {
	obj      *unstructured.Unstructured
	manifest string
}

func renderedObjectsValue(objs []renderedObject) types.List {
	vals := make([]attr.Value, len(objs))
	for i, o := range objs {
		vals[i] = types.ObjectValueMust(renderedObjectType.AttrTypes, map[string]attr.Value{
			"api_version": types.StringValue(o.obj.GetAPIVersion()), "kind": types.StringValue(o.obj.GetKind()),
			"namespace": types.StringValue(o.obj.GetNamespace()), "name": types.StringValue(o.obj.GetName()),
			"manifest": types.StringValue(o.manifest),
		})
	}
	return types.ListValueMust(renderedObjectType, vals)
}
