package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/inputs"
)

// NewResourceSetInputsDataSource is the stevedore_resourceset_inputs data source.
func NewResourceSetInputsDataSource() datasource.DataSource { return &resourceSetInputsDataSource{} }

type resourceSetInputsDataSource struct{}

var _ datasource.DataSourceWithValidateConfig = (*resourceSetInputsDataSource)(nil)

type resourceSetInputsModel struct {
	ID            types.String  `tfsdk:"id"`
	Type          types.String  `tfsdk:"type"`
	URL           types.String  `tfsdk:"url"`
	UID           types.String  `tfsdk:"uid"`
	DefaultValues types.Dynamic `tfsdk:"default_values"`
	Username      types.String  `tfsdk:"username"`
	Password      types.String  `tfsdk:"password"`
	Token         types.String  `tfsdk:"token"`
	CACert        types.String  `tfsdk:"ca_cert"`
	Insecure      types.Bool    `tfsdk:"insecure"`
	Filter        types.Object  `tfsdk:"filter"`
	Skip          types.Object  `tfsdk:"skip"`
	Inputs        types.Dynamic `tfsdk:"inputs"`
}

type inputsFilterModel struct {
	Limit         types.Int64  `tfsdk:"limit"`
	Labels        types.List   `tfsdk:"labels"`
	IncludeBranch types.String `tfsdk:"include_branch"`
	ExcludeBranch types.String `tfsdk:"exclude_branch"`
	IncludeTag    types.String `tfsdk:"include_tag"`
	ExcludeTag    types.String `tfsdk:"exclude_tag"`
	Semver        types.String `tfsdk:"semver"`
}

type inputsSkipModel struct {
	Labels types.List `tfsdk:"labels"`
}

func (d *resourceSetInputsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_resourceset_inputs"
}

func (d *resourceSetInputsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = resourceSetInputsSchema()
}

// ValidateConfig reports what needs no network, for the fields known so
// far: a problem is reported when the field it names is known (and the type).
func (d *resourceSetInputsDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m resourceSetInputsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Type.IsUnknown() || m.Type.IsNull() {
		return
	}
	spec, b := m.spec(ctx)
	resp.Diagnostics.Append(b.diags...)
	for _, e := range spec.Validate() {
		if !b.isUnknown(inputsFieldRoot(e.Path)) {
			addError(&resp.Diagnostics, "Invalid "+inputsFieldRoot(e.Path), e)
		}
	}
}

func (d *resourceSetInputsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m resourceSetInputsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, read := m.spec(ctx)
	resp.Diagnostics.Append(read.diags...)
	for _, e := range spec.Validate() {
		addError(&resp.Diagnostics, "Invalid "+inputsFieldRoot(e.Path), e)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	got, err := inputs.Fetch(ctx, spec)
	if err != nil {
		at := path.Root("url")
		if spec.Type == inputs.TypeStatic {
			at = path.Root("default_values")
		}
		resp.Diagnostics.AddAttributeError(at, "Cannot read the inputs", fmt.Sprintf("%s %s: %v", spec.Type, spec.URL, err))
		return
	}
	list := make([]any, len(got))
	for i, in := range got {
		list[i] = in
	}
	v, err := tfValue(list)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Cannot convert the inputs", err.Error())
		return
	}
	b, err := json.Marshal(got)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Cannot convert the inputs", err.Error())
		return
	}
	sum := sha256.Sum256(b)
	m.ID = types.StringValue("sha256:" + hex.EncodeToString(sum[:]))
	m.Inputs = types.DynamicValue(v)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// spec converts the configuration; the builder's record holds the fields
// not known yet (as the engine names them, `filter.semver`), read as empty.
func (m resourceSetInputsModel) spec(ctx context.Context) (inputs.Spec, *specBuilder) {
	b := newSpecBuilder()
	s := inputs.Spec{
		Type: b.str("type", m.Type),
		URL:  b.str("url", m.URL),
		UID:  b.str("uid", m.UID),
		Auth: inputs.Auth{
			Username: b.str("username", m.Username), Password: b.str("password", m.Password),
			Token: b.str("token", m.Token), CACert: b.str("ca_cert", m.CACert),
		},
		Insecure: b.boolean("insecure", m.Insecure),
	}
	if b.read("filter", m.Filter) {
		var f inputsFilterModel
		b.diags.Append(m.Filter.As(ctx, &f, basetypes.ObjectAsOptions{})...)
		s.Filter = f.filter(b.under("filter"))
	}
	if b.read("skip", m.Skip) {
		var sk inputsSkipModel
		b.diags.Append(m.Skip.As(ctx, &sk, basetypes.ObjectAsOptions{})...)
		s.SkipLabels = b.under("skip").strings("labels", sk.Labels)
	}
	dv, err := goValue(m.DefaultValues)
	switch {
	case err != nil:
		b.unknownAt("default_values")
	case dv == nil:
	default:
		obj, ok := dv.(map[string]any)
		if !ok {
			b.diags.AddAttributeError(path.Root("default_values"), "Invalid default_values", "must be an object, got "+typeName(dv))
		}
		s.DefaultValues = obj
	}
	return s, b
}

// filter reads the filter block.
func (f *inputsFilterModel) filter(b *specBuilder) inputs.Filter {
	var out inputs.Filter
	if l := b.integer("limit", f.Limit); !f.Limit.IsNull() && !f.Limit.IsUnknown() {
		if l < 1 || l > inputs.MaxLimit {
			// The engine reads 0 as unset: report the range here.
			b.diags.AddAttributeError(path.Root("filter").AtName("limit"), "Invalid filter",
				fmt.Sprintf("filter.limit must be between 1 and %d, got %d", inputs.MaxLimit, l))
		} else {
			out.Limit = int(l)
		}
	}
	out.Labels = b.strings("labels", f.Labels)
	out.IncludeBranch, out.ExcludeBranch = b.str("include_branch", f.IncludeBranch), b.str("exclude_branch", f.ExcludeBranch)
	out.IncludeTag, out.ExcludeTag = b.str("include_tag", f.IncludeTag), b.str("exclude_tag", f.ExcludeTag)
	out.Semver = b.str("semver", f.Semver)
	return out
}

var inputsFieldIndex = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// inputsFieldRoot drops the index of `filter.labels[1]`.
func inputsFieldRoot(field string) string {
	if m := inputsFieldIndex.FindStringSubmatch(field); m != nil {
		return m[1]
	}
	return field
}
