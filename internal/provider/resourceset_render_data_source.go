package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// NewResourceSetRenderDataSource is the stevedore_resourceset_render data source.
func NewResourceSetRenderDataSource() datasource.DataSource { return &resourceSetRenderDataSource{} }

// resourceSetRenderDataSource renders a set without a cluster: it uses
// nothing of the provider's configuration.
type resourceSetRenderDataSource struct{}

var _ datasource.DataSourceWithValidateConfig = (*resourceSetRenderDataSource)(nil)

type resourceSetRenderModel struct {
	Name              types.String         `tfsdk:"name"`
	Namespace         types.String         `tfsdk:"namespace"`
	Inputs            types.Dynamic        `tfsdk:"inputs"`
	Resources         types.Dynamic        `tfsdk:"resources"`
	ResourcesTemplate types.String         `tfsdk:"resources_template"`
	Steps             types.Dynamic        `tfsdk:"steps"`
	CommonMetadata    *commonMetadataModel `tfsdk:"common_metadata"`
	InputStrategy     types.Object         `tfsdk:"input_strategy"`
	APIResources      []apiResourceModel   `tfsdk:"api_resources"`

	Objects   types.List   `tfsdk:"objects"`
	Inventory types.List   `tfsdk:"inventory"`
	Manifests types.String `tfsdk:"manifests"`
}

type apiResourceModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Kind       types.String `tfsdk:"kind"`
	Namespaced types.Bool   `tfsdk:"namespaced"`
}

func (d *resourceSetRenderDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_resourceset_render"
}

func (d *resourceSetRenderDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = resourceSetRenderSchema()
}

// setModel is the stevedore_resourceset configuration m renders as: the
// resource's own conversion makes the engine's spec.
func (m *resourceSetRenderModel) setModel() *resourceSetModel {
	return &resourceSetModel{
		Name: m.Name, Namespace: m.Namespace, Inputs: m.Inputs, Resources: m.Resources,
		ResourcesTemplate: m.ResourcesTemplate, Steps: m.Steps, CommonMetadata: m.CommonMetadata,
		InputStrategy: m.InputStrategy,
	}
}

// ValidateConfig checks what the resource's ValidateConfig checks of the same
// attributes, and api_resources.
func (d *resourceSetRenderDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m resourceSetRenderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateRenderConfig(&resp.Diagnostics, m.setModel())
	apiResources(m.APIResources, &resp.Diagnostics)
}

func (d *resourceSetRenderDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m resourceSetRenderModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, known, diags := specFrom(ctx, m.setModel())
	resp.Diagnostics.Append(diags...)
	if !known && !resp.Diagnostics.HasError() {
		// Terraform reads a data source only once its configuration is known.
		resp.Diagnostics.AddError("Unknown values", "a value of the configuration is not known yet")
	}
	extra := apiResources(m.APIResources, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	id := spec.Namespace + "/" + spec.Name
	res, err := resourceset.RenderOffline(spec, kube.OfflineRESTMapper(extra))
	if err != nil {
		addError(&resp.Diagnostics, "Cannot render the resource set", err)
		if errors.Is(err, resourceset.ErrUnknownKind) {
			resp.Diagnostics.AddAttributeError(path.Root("api_resources"), "Unknown kind",
				about(resourceset.Kind, id, "without a cluster, a kind that is not one of Kubernetes' built-in kinds and whose "+
					"CustomResourceDefinition the set does not render is declared in api_resources, with whether it is namespaced"))
		}
		return
	}
	for _, w := range res.Warnings {
		addWarning(&resp.Diagnostics, w.Summary, fielderr.Object(resourceset.Kind, id, w))
	}
	objs := make([]renderedObject, len(res.Objects))
	for i, o := range res.Objects {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			addError(&resp.Diagnostics, "Cannot render the resource set", fielderr.Object(resourceset.Kind, id, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)))
			return
		}
		objs[i] = renderedObject{obj: o, manifest: string(y)}
	}
	m.Objects = renderedObjectsValue(objs)
	m.Inventory = renderInventoryValue(res.Inventory, res.Steps)
	m.Manifests = types.StringValue(res.Manifests)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// apiResources reads api_resources, with a diagnostic on each entry that
// is not known or whose api_version does not parse.
func apiResources(list []apiResourceModel, diags *diag.Diagnostics) []kube.KindScope {
	var out []kube.KindScope
	for i, r := range list {
		at := path.Root("api_resources").AtListIndex(i)
		if r.APIVersion.IsUnknown() || r.Kind.IsUnknown() || r.Namespaced.IsUnknown() {
			continue
		}
		gv, err := schema.ParseGroupVersion(r.APIVersion.ValueString())
		if err != nil || gv.Version == "" {
			diags.AddAttributeError(at.AtName("api_version"), "Invalid api_resources",
				fmt.Sprintf("api_resources[%d].api_version %q must be group/version, or v1 for the core group", i, r.APIVersion.ValueString()))
			continue
		}
		if r.Kind.ValueString() == "" {
			diags.AddAttributeError(at.AtName("kind"), "Invalid api_resources", fmt.Sprintf("api_resources[%d].kind must not be empty", i))
			continue
		}
		out = append(out, kube.KindScope{GroupVersionKind: gv.WithKind(r.Kind.ValueString()), Namespaced: r.Namespaced.ValueBool()})
	}
	return out
}

// renderInventoryValue is the planned inventory of entries, each with the
// step of steps that renders it (none: null).
func renderInventoryValue(entries []kube.Entry, steps map[string]string) types.List {
	vals := make([]attr.Value, len(entries))
	for i, e := range entries {
		step := types.StringNull()
		if name := steps[e.ID]; name != "" {
			step = types.StringValue(name)
		}
		vals[i] = types.ObjectValueMust(renderInventoryEntryType.AttrTypes, map[string]attr.Value{
			"id": types.StringValue(e.ID), "v": types.StringValue(e.V), "step": step,
		})
	}
	return types.ListValueMust(renderInventoryEntryType, vals)
}
