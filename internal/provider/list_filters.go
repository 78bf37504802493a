package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
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

// selector is the parsed label_selector, nil when unset. Validate has
// refused a malformed one.
func (m listFilterModel) selector() (labels.Selector, error) {
	if m.LabelSelector.IsNull() || m.LabelSelector.IsUnknown() {
		return nil, nil
	}
	return labels.Parse(m.LabelSelector.ValueString())
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
			Validators:  []validator.String{labelSelectorValidator{}}},
	}
}

// labelSelectorValidator refuses, at validate, a label selector that does
// not parse.
type labelSelectorValidator struct{}

func (labelSelectorValidator) Description(context.Context) string {
	return "must be a Kubernetes label selector"
}

func (v labelSelectorValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (labelSelectorValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := labels.Parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid label selector",
			fmt.Sprintf("%s %q is not a Kubernetes label selector: %v", req.Path, req.ConfigValue.ValueString(), err))
	}
}

// dataSourceData is the provider's data for a data source, nil before the
// provider is configured.
func dataSourceData(req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) *providerData {
	if req.ProviderData == nil {
		return nil
	}
	data, ok := req.ProviderData.(*providerData)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("got %T: this is a bug in the provider", req.ProviderData))
		return nil
	}
	return data
}

// clusterKnown reports, with an error when it is not, that data reaches a
// cluster: a listing needs the provider's configuration known at plan.
func clusterKnown(data *providerData, resp *datasource.ReadResponse) bool {
	if data == nil || data.unknown {
		resp.Diagnostics.AddError("Provider not configured",
			"listing what is in the cluster needs a known provider configuration: a cluster made in the same apply has nothing to list yet")
		return false
	}
	return true
}
