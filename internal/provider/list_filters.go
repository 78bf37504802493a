package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
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

// listFilterDocs describe the filters of one kind of listing (releases,
// sets): the same text in the data source and the list resource.
type listFilterDocs struct {
	// namespace describes namespace; owners are the values of owner, which
	// ownerDesc describes; selector says what label_selector matches.
	namespace string
	owners    []string
	ownerDesc string
	selector  string
}

// The filter attributes, in either schema: their descriptions and validators.
func (d listFilterDocs) ownerText() string {
	return "List only what this owner made: one of `" + strings.Join(d.owners, "`, `") + "`. " + d.ownerDesc
}

func (d listFilterDocs) selectorText() string {
	return "A Kubernetes label selector (`app=web,tier in (a,b),!legacy`), as `kubectl get -l` takes: " + d.selector
}

func (d listFilterDocs) validators() (namespace, owner, selector []validator.String) {
	return []validator.String{stringvalidator.LengthAtLeast(1)}, []validator.String{stringvalidator.OneOf(d.owners...)},
		[]validator.String{labelSelectorValidator}
}

// listResourceValidators are validators for the `config` block of a list
// block: Terraform places a diagnostic's attribute path in the list block,
// where the filters are not (they are in its `config`), so the detail says
// the attribute's name itself (the framework's own validators' do).
func (d listFilterDocs) listResourceValidators() (namespace, owner, selector []validator.String) {
	namespace, owner, _ = d.validators()
	named := labelSelectorValidator
	named.named = true
	return namespace, owner, []validator.String{named}
}

// listFilterAttributes are the filter attributes of a listing data source.
func listFilterAttributes(d listFilterDocs) map[string]schema.Attribute {
	ns, owner, sel := d.validators()
	return map[string]schema.Attribute{
		"namespace":      schema.StringAttribute{Optional: true, Description: d.namespace, Validators: ns},
		"owner":          schema.StringAttribute{Optional: true, Description: d.ownerText(), Validators: owner},
		"label_selector": schema.StringAttribute{Optional: true, Description: d.selectorText(), Validators: sel},
	}
}

// listResourceFilterAttributes are the same filters as the `config` of a
// list resource (terraform query).
func listResourceFilterAttributes(d listFilterDocs) map[string]listschema.Attribute {
	ns, owner, sel := d.listResourceValidators()
	return map[string]listschema.Attribute{
		"namespace":      listschema.StringAttribute{Optional: true, Description: d.namespace, Validators: ns},
		"owner":          listschema.StringAttribute{Optional: true, Description: d.ownerText(), Validators: owner},
		"label_selector": listschema.StringAttribute{Optional: true, Description: d.selectorText(), Validators: sel},
	}
}

// releaseFilterDocs are the filters of the listings of releases
// (stevedore_helmreleases, the stevedore_helmrelease list resource).
var releaseFilterDocs = listFilterDocs{
	namespace: "List only the releases Helm stores in this namespace, as `helm list --namespace` does (for a Flux HelmRelease, " +
		"its `storageNamespace`, by default its own namespace). Default: every namespace.",
	owners: release.ListOwners,
	ownerDesc: "`helm`: the helm CLI (3 or 4) or another Helm SDK client, hashicorp/helm's `helm_release` included, which leaves " +
		"nothing in the cluster that tells it from `helm install`; `flux`: a Flux HelmRelease (its objects carry " +
		"helm-controller's `helm.toolkit.fluxcd.io/name` labels); `stevedore`: a `stevedore_helmrelease` (its Helm " +
		"records carry the `stevedore.dev/owner` label).",
	selector: "matched against the labels of the latest Helm record of each release (Helm's `name`, `owner`, `status`, " +
		"`version`, and those given with `helm install --labels`).",
}

// setFilterDocs are the filters of the listings of resource sets
// (stevedore_resourcesets, the stevedore_resourceset list resource).
var setFilterDocs = listFilterDocs{
	namespace: "List only the sets of this namespace. Default: every namespace.",
	owners:    resourceset.ListOwners,
	ownerDesc: "`stevedore`: a `stevedore_resourceset` (its objects carry the `stevedore.dev/resourceset-name` labels); " +
		"`flux-operator`: a flux-operator `ResourceSet` (fluxcd.controlplane.io/v1; none when the cluster has no such CRD).",
	selector: "matched against the labels of a flux-operator `ResourceSet`, or of the objects of a stevedore set (which has no " +
		"object of its own): a stevedore set is listed when one of its objects matches.",
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
	// named puts the attribute's path before the detail.
	named bool
}

func (v stringCheck) Description(context.Context) string { return v.desc }

func (v stringCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		detail := err.Error()
		if v.named {
			detail = "Attribute " + req.Path.String() + ": " + detail
		}
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, detail)
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
	sel, err := f.selector()
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("label_selector"), "Invalid label selector", err.Error())
		return nil, false
	}
	return sel, true
}

// selector is the parsed label_selector, nil when it is not set.
func (f *listFilterModel) selector() (labels.Selector, error) {
	if f.LabelSelector.IsNull() || f.LabelSelector.IsUnknown() {
		return nil, nil
	}
	return labels.Parse(f.LabelSelector.ValueString())
}
