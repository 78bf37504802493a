package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// NewResourceSetsDataSource is the stevedore_resourcesets data source: the
// resource sets in the cluster, stevedore's and flux-operator's.
func NewResourceSetsDataSource() datasource.DataSource {
	return &resourceSetsDataSource{listDataSource{typeName: "_resourcesets"}}
}

type resourceSetsDataSource struct{ listDataSource }

type resourceSetsModel struct {
	listFilterModel
	ResourceSets types.List `tfsdk:"resource_sets"`
}

var listedSetType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"namespace": types.StringType, "name": types.StringType, "owner": types.StringType,
	"owner_ids": types.ListType{ElemType: types.StringType}, "objects": types.Int64Type, "import_id": types.StringType,
}}

func (d *resourceSetsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := listFilterAttributes(setFilterDocs)
	attrs["resource_sets"] = schema.ListNestedAttribute{
		Computed: true,
		Description: "The sets, sorted by namespace, name and owner. A list, not a map: during a migration a stevedore set " +
			"and a flux-operator ResourceSet may share a namespace and name.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"namespace": listedStr("The set's namespace."),
			"name":      listedStr("The set's name."),
			"owner":     listedStr("`stevedore` or `flux-operator`."),
			"owner_ids": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				Description: "The owner IDs a stevedore set's objects carry, one per `stevedore_resourceset` instance: two " +
					"mean two configurations' sets of one name, which the import refuses. Empty for a flux-operator ResourceSet."},
			"objects": schema.Int64Attribute{Computed: true,
				Description: "The number of objects: those that carry a stevedore set's labels, or the ResourceSet's `status.inventory`."},
			"import_id": listedStr("The import ID of `stevedore_resourceset`: `<namespace>/<name>` for a stevedore set (null when its " +
				"objects' labels do not name both); `flux-operator:<namespace>/<name>` for a flux-operator ResourceSet, which imports as its " +
				"spec with `take_over_from = [\"flux-operator\"]`, the objects taken over at the next apply (see the flux-operator migration guide)."),
		}},
	}
	resp.Schema = schema.Schema{
		Description: "The resource sets in the cluster, read at plan: `stevedore_resourceset`s (found by their objects' labels, " +
			"one metadata list per kind the cluster serves) and flux-operator ResourceSets, with the import ID of each " +
			"stevedore set, for `import` blocks with `for_each` (Terraform 1.7+, OpenTofu 1.7+).",
		Attributes: attrs,
	}
}

func (d *resourceSetsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m resourceSetsModel
	sel, ok := d.readFilters(ctx, req, resp, &m, &m.listFilterModel)
	if !ok {
		return
	}
	got, err := d.data.sets.List(ctx, resourceset.ListOptions{Namespace: m.Namespace.ValueString(), Owner: m.Owner.ValueString(), Selector: sel})
	if err != nil {
		addError(&resp.Diagnostics, "Cannot list the resource sets", err)
		return
	}
	elems := make([]attr.Value, 0, len(got))
	for _, s := range got {
		ids := make([]attr.Value, 0, len(s.OwnerIDs))
		for _, id := range s.OwnerIDs {
			ids = append(ids, types.StringValue(id))
		}
		importID := types.StringNull()
		if s.Importable {
			importID = types.StringValue(resourceset.ImportIDOf(s))
		}
		elems = append(elems, types.ObjectValueMust(listedSetType.AttrTypes, map[string]attr.Value{
			"namespace": types.StringValue(s.Namespace), "name": types.StringValue(s.Name), "owner": types.StringValue(s.Owner),
			"owner_ids": types.ListValueMust(types.StringType, ids), "objects": types.Int64Value(int64(s.Objects)),
			"import_id": importID,
		}))
	}
	m.ResourceSets = types.ListValueMust(listedSetType, elems)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
