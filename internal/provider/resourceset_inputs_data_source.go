package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
	spec, unknown, diags := m.spec(ctx)
	resp.Diagnostics.Append(diags...)
	for _, e := range spec.Validate() {
		if !unknown[inputsFieldRoot(e.Path)] {
			addFieldError(&resp.Diagnostics, e)
		}
	}
}

func (d *resourceSetInputsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m resourceSetInputsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, _, diags := m.spec(ctx)
	resp.Diagnostics.Append(diags...)
	for _, e := range spec.Validate() {
		addFieldError(&resp.Diagnostics, e)
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

// spec converts the configuration; unknown holds the fields (as the
// engine names them, `filter.semver`) not known yet, read as empty.
func (m resourceSetInputsModel) spec(ctx context.Context) (inputs.Spec, map[string]bool, diag.Diagnostics) {
	var diags diag.Diagnostics
	unknown := map[string]bool{}
	str := func(field string, v types.String) string {
		if v.IsUnknown() {
			unknown[field] = true
		}
		return v.ValueString()
	}
	list := func(field string, v types.List) []string {
		if v.IsUnknown() {
			unknown[field] = true
			return nil
		}
		var out []string
		for i, e := range v.Elements() {
			s, ok := e.(basetypes.StringValue)
			if !ok || s.IsUnknown() {
				unknown[field] = true
				continue
			}
			if s.IsNull() {
				diags.AddAttributeError(attributePath(fielderr.Index(field, i)), "Invalid value", field+" must not hold null")
				continue
			}
			out = append(out, s.ValueString())
		}
		return out
	}
	s := inputs.Spec{
		Type: str("type", m.Type),
		URL:  str("url", m.URL),
		UID:  str("uid", m.UID),
		Auth: inputs.Auth{
			Username: str("username", m.Username), Password: str("password", m.Password),
			Token: str("token", m.Token), CACert: str("ca_cert", m.CACert),
		},
		Insecure: m.Insecure.ValueBool(),
	}
	if m.Insecure.IsUnknown() {
		unknown["insecure"] = true
	}
	if m.Filter.IsUnknown() {
		unknown["filter"] = true
	} else if !m.Filter.IsNull() {
		var f inputsFilterModel
		diags.Append(m.Filter.As(ctx, &f, basetypes.ObjectAsOptions{})...)
		if f.Limit.IsUnknown() {
			unknown["filter.limit"] = true
		} else if l := f.Limit.ValueInt64(); !f.Limit.IsNull() {
			if l < 1 || l > inputs.MaxLimit {
				// The engine reads 0 as unset: report the range here.
				diags.AddAttributeError(path.Root("filter").AtName("limit"), "Invalid filter",
					fmt.Sprintf("filter.limit must be between 1 and %d, got %d", inputs.MaxLimit, l))
			} else {
				s.Filter.Limit = int(l)
			}
		}
		s.Filter.Labels = list("filter.labels", f.Labels)
		s.Filter.IncludeBranch = str("filter.include_branch", f.IncludeBranch)
		s.Filter.ExcludeBranch = str("filter.exclude_branch", f.ExcludeBranch)
		s.Filter.IncludeTag = str("filter.include_tag", f.IncludeTag)
		s.Filter.ExcludeTag = str("filter.exclude_tag", f.ExcludeTag)
		s.Filter.Semver = str("filter.semver", f.Semver)
	}
	if m.Skip.IsUnknown() {
		unknown["skip"] = true
	} else if !m.Skip.IsNull() {
		var sk inputsSkipModel
		diags.Append(m.Skip.As(ctx, &sk, basetypes.ObjectAsOptions{})...)
		s.SkipLabels = list("skip.labels", sk.Labels)
	}
	dv, err := goValue(m.DefaultValues)
	switch {
	case err != nil:
		unknown["default_values"] = true
	case dv == nil:
	default:
		obj, ok := dv.(map[string]any)
		if !ok {
			diags.AddAttributeError(path.Root("default_values"), "Invalid default_values", "must be an object, got "+typeName(dv))
		}
		s.DefaultValues = obj
	}
	return s, unknown, diags
}

// addFieldError is a diagnostic on the attribute e names, summarized with
// the block or attribute at its root.
func addFieldError(diags *diag.Diagnostics, e *fielderr.Error) {
	addError(diags, "Invalid "+inputsFieldRoot(e.Path), e)
}

var inputsFieldIndex = regexp.MustCompile(`^(.*)\[(\d+)\]$`)

// inputsFieldRoot drops the index of `filter.labels[1]`.
func inputsFieldRoot(field string) string {
	if m := inputsFieldIndex.FindStringSubmatch(field); m != nil {
		return m[1]
	}
	return field
}
