package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/labels"
)

// The data sources that list what is in the cluster (stevedore_helmreleases,
// stevedore_resourcesets) share their filters and their configuration: the
// filters are checked at validate, the cluster is read at plan.

// listFilterModel is the filters of a listing data source.
type listFilterModel struct {
	Namespace     types.String `tfsdk:"namespace"`
	Owner         types.String `tfsdk:"owner"`
	LabelSelector types.String `tfsdk:"label_selector"`
}

// listFilterAttributes are the filter attributes: namespace described by
// nsDesc, owner one of owners (described by ownerDesc), label_selector
// matching what selDesc says.
func listFilterAttributes(nsDesc string, owners []string, ownerDesc, selDesc string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"namespace": schema.StringAttribute{Optional: true, Description: nsDesc,
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
		"owner": schema.StringAttribute{Optional: true,
			Description: "List only what this owner made: one of `" + strings.Join(owners, "`, `") + "`. " + ownerDesc,
			Validators:  []validator.String{stringvalidator.OneOf(owners...)}},
		"label_selector": schema.StringAttribute{Optional: true,
			Description: "A Kubernetes label selector (`app=web,tier in (a,b),!legacy`), as `kubectl get -l` takes: " + selDesc,
			Validators:  []validator.String{labelSelectorValidator}},
	}
}

// listedStr is a computed string attribute of a listed item.
func listedStr(desc string) schema.StringAttribute {
	return schema.StringAttribute{Computed: true, Description: desc}
}

// stringCheck is a string attribute's validator that check refuses, at
// validate, with summary: a value that is null or unknown is not checked.
type stringCheck struct {
	desc, summary string
	check         func(string) error
}

func (v stringCheck) Description(context.Context) string { return v.desc }

func (v stringCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, err.Error())
	}
}

// labelSelectorValidator refuses, at validate, a label selector that does
// not parse.
var labelSelectorValidator = stringCheck{desc: "must be a Kubernetes label selector", summary: "Invalid label selector",
	check: func(s string) error {
		if _, err := labels.Parse(s); err != nil {
			return fmt.Errorf("%q is not a Kubernetes label selector: %w", s, err)
		}
		return nil
	}}

// listDataSource is what the listing data sources share: their type name,
// the provider's data, and the reading of their filters.
type listDataSource struct {
	typeName string
	data     *providerData
}

func (d *listDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + d.typeName
}

func (d *listDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataOf(req.ProviderData, &resp.Diagnostics)
}

// readFilters reads the configuration into m, whose filters are f, and
// returns the parsed label selector; false, with the error in resp, when
// the configuration cannot be read or the provider reaches no cluster yet
// (a cluster made in the same apply has nothing to list).
func (d *listDataSource) readFilters(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse, m any, f *listFilterModel) (labels.Selector, bool) {
	resp.Diagnostics.Append(req.Config.Get(ctx, m)...)
	if resp.Diagnostics.HasError() {
		return nil, false
	}
	if d.data == nil || d.data.unknown {
		resp.Diagnostics.AddError("Provider not configured",
			"listing what is in the cluster needs a known provider configuration: a cluster made in the same apply has nothing to list yet")
		return nil, false
	}
	if f.LabelSelector.IsNull() || f.LabelSelector.IsUnknown() {
		return nil, true
	}
	sel, err := labels.Parse(f.LabelSelector.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("label_selector"), "Invalid label selector", err.Error())
		return nil, false
	}
	return sel, true
}
