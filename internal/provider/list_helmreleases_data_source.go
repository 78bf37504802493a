package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// NewHelmReleasesDataSource is the stevedore_helmreleases data source: the
// Helm releases in the cluster, each with the import ID that adopts it, for
// `import { for_each = ... }`.
func NewHelmReleasesDataSource() datasource.DataSource {
	return &helmReleasesDataSource{listDataSource{typeName: "_helmreleases"}}
}

type helmReleasesDataSource struct{ listDataSource }

type helmReleasesModel struct {
	listFilterModel
	Releases types.Map `tfsdk:"releases"`
}

// listedResourceType is what a listed release's import ID sets of the
// resource: the attributes its configuration then sets (null: unset).
var listedResourceType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "namespace": types.StringType, "target_namespace": types.StringType,
	"release_name": types.StringType, "storage_namespace": types.StringType,
}}

var listedReleaseType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "namespace": types.StringType, "storage_namespace": types.StringType,
	"chart_name": types.StringType, "chart_version": types.StringType, "app_version": types.StringType,
	"status": types.StringType, "revision": types.Int64Type,
	"owner": types.StringType, "owner_name": types.StringType, "owner_id": types.StringType,
	"labels": types.MapType{ElemType: types.StringType}, "import_id": types.StringType, "resource": listedResourceType,
}}

func (d *helmReleasesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := listFilterAttributes(releaseFilterDocs)
	attrs["releases"] = schema.MapNestedAttribute{
		Computed: true,
		Description: "The releases, by `<storage_namespace>/<name>`, as the latest revision in Helm storage says (releases " +
			"uninstalled with their history kept are left out). Feed it to `import { for_each = ... }` with `id = each.value.import_id`.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name":              listedStr("The release name."),
			"namespace":         listedStr("The namespace of the release's objects (`helm list`'s NAMESPACE, a HelmRelease's target namespace)."),
			"storage_namespace": listedStr("The namespace of the release's Helm records."),
			"chart_name":        listedStr("The chart name of the latest revision."),
			"chart_version":     listedStr("The chart version of the latest revision."),
			"app_version":       listedStr("The app version of the latest revision's chart."),
			"status":            listedStr("Helm's status of the latest revision: `deployed`, `failed`, `pending-install`, ..."),
			"revision":          schema.Int64Attribute{Computed: true, Description: "The latest revision."},
			"owner":             listedStr("Who made it: `helm`, `flux` or `stevedore` (see `owner`)."),
			"owner_name": listedStr("`<namespace>/<name>` of the Flux HelmRelease or `stevedore_helmrelease` the release's " +
				"objects name; null when they name none."),
			"owner_id": listedStr("The owner ID of the `stevedore_helmrelease` instance its records carry; null when none."),
			"labels": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				Description: "The labels of the latest Helm record."},
			"import_id": listedStr("The import ID of `stevedore_helmrelease` that adopts the release as it is: the HelmRelease's " +
				"`<namespace>/<name>[@<target_namespace>]` for a Flux release, the resource's for a stevedore one, else " +
				"`<namespace>/<release>`; with `release_name` and `storage_namespace` where Flux's naming rules do not give them."),
			"resource": schema.SingleNestedAttribute{Computed: true,
				Description: "What the import ID sets of the resource, to set in its configuration as they are: " +
					"`name`, `namespace`, and `target_namespace`, `release_name`, `storage_namespace` (null when the ID leaves them unset).",
				Attributes: map[string]schema.Attribute{
					"name": listedStr("`name`."), "namespace": listedStr("`namespace`."), "target_namespace": listedStr("`target_namespace`, or null."),
					"release_name": listedStr("`release_name`, or null."), "storage_namespace": listedStr("`storage_namespace`, or null."),
				}},
		}},
	}
	resp.Schema = schema.Schema{
		Description: "The Helm releases in the cluster (every namespace's, or one's), read from Helm storage at plan: who made " +
			"each (the helm CLI, Flux, stevedore) and the import ID that adopts it into a `stevedore_helmrelease`, for " +
			"`import` blocks with `for_each` (Terraform 1.7+, OpenTofu 1.7+).",
		Attributes: attrs,
	}
}

func (d *helmReleasesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m helmReleasesModel
	sel, ok := d.readFilters(ctx, req, resp, &m, &m.listFilterModel)
	if !ok {
		return
	}
	got, err := d.data.releases.List(ctx, release.ListOptions{
		StorageNamespace: m.Namespace.ValueString(), Owner: m.Owner.ValueString(), Selector: sel})
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the Helm releases", err)
		return
	}
	elems := make(map[string]attr.Value, len(got))
	for _, l := range got {
		lbls := make(map[string]attr.Value, len(l.Labels))
		for k, v := range l.Labels {
			lbls[k] = types.StringValue(v)
		}
		id := l.ImportID
		elems[l.StorageNamespace+"/"+l.Name] = types.ObjectValueMust(listedReleaseType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(l.Name), "namespace": types.StringValue(l.Namespace),
			"storage_namespace": types.StringValue(l.StorageNamespace),
			"chart_name":        types.StringValue(l.ChartName), "chart_version": types.StringValue(l.ChartVersion),
			"app_version": types.StringValue(l.AppVersion), "status": types.StringValue(l.Status),
			"revision": types.Int64Value(int64(l.Revision)), "owner": types.StringValue(l.Owner),
			"owner_name": nullIfEmpty(l.OwnerName), "owner_id": nullIfEmpty(l.OwnerID),
			"labels":    types.MapValueMust(types.StringType, lbls),
			"import_id": types.StringValue(id.String()),
			"resource": types.ObjectValueMust(listedResourceType.AttrTypes, map[string]attr.Value{
				"name": types.StringValue(id.Name), "namespace": types.StringValue(id.Namespace),
				"target_namespace": nullIfEmpty(id.TargetNamespace), "release_name": nullIfEmpty(id.ReleaseName),
				"storage_namespace": nullIfEmpty(id.StorageNamespace),
			}),
		})
	}
	m.Releases = types.MapValueMust(listedReleaseType, elems)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// nullIfEmpty is s, or null when s is "".
func nullIfEmpty(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}
