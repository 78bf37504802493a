package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// set, set_list and set_sensitive: hashicorp/helm 3.x's helm_release
// attributes of the same names and shapes, so that a helm_release block
// converts by renaming. Flux has no equivalent; the values they give are set
// into `values` (after its documents are merged), so config_digest covers
// them.

var (
	setEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "value": types.StringType, "type": types.StringType,
	}}
	setListEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "value": types.ListType{ElemType: types.StringType},
	}}
)

type setEntryModel struct {
	Name  types.String `tfsdk:"name"`
	Value types.String `tfsdk:"value"`
	Type  types.String `tfsdk:"type"`
}

type setListEntryModel struct {
	Name  types.String `tfsdk:"name"`
	Value types.List   `tfsdk:"value"`
}

const setTypeDescription = "How the value is parsed, as Helm's flags: `auto` (default; `--set`: `true`, `2` and `null` are typed), " +
	"`string` (`--set-string`), `literal` (`--set-literal`: the whole value is one string, commas included) or `json` (`--set-json`)."

func setAttribute(sensitive bool) schema.ListNestedAttribute {
	desc := "Values set at Helm `--set` paths, in order, after the documents of `values` are merged: hashicorp/helm's `set`, " +
		"with Helm's own parser (`image.tag`, escaped dots `kubernetes\\.io/name`, list indexes `servers[0].port`). " +
		"A stevedore addition for helm_release users; Flux has no `set`. Covered by `config_digest`."
	if sensitive {
		desc = "As `set`, for secret values: the values never show in plan output (they are stored in state, marked " +
			"sensitive; `values_from` a Secret keeps them out of state). Applied after `set` and `set_list`, as hashicorp/helm applies them."
	}
	return schema.ListNestedAttribute{
		Optional:    true,
		Description: desc,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, Description: "The `--set` path.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"value": schema.StringAttribute{Optional: !sensitive, Required: sensitive, Sensitive: sensitive,
				Description: "The value, parsed as `type` says."},
			"type": schema.StringAttribute{Optional: true, Description: setTypeDescription,
				Validators: []validator.String{stringvalidator.OneOf(release.SetTypes...)}},
		}},
	}
}

func setListAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional: true,
		Description: "Lists set at Helm `--set` paths, after `set`: hashicorp/helm's `set_list` (`name = \"hosts\", value = [\"a\", \"b\"]` " +
			"is `--set hosts={a,b}`). A stevedore addition for helm_release users.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, Description: "The `--set` path.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"value": schema.ListAttribute{Required: true, ElementType: types.StringType, Description: "The list's elements."},
		}},
	}
}

// sets translates set, set_list and set_sensitive into the engine's entries,
// in hashicorp/helm's order (release.Spec.Sets); the engine sets them into
// values (release.InlineValues). Unknown entries leave the spec unknown. An
// entry that cannot be set into values is an error on its attribute now, at
// plan.
func (b *specBuilder) sets(ctx context.Context, values map[string]any, m *helmReleaseModel) []release.SetValue {
	var out []release.SetValue
	for _, attr := range []struct {
		name      string
		list      types.List
		sensitive bool
	}{{"set", m.Set, false}, {"set_list", m.SetList, false}, {"set_sensitive", m.SetSensitive, true}} {
		if attr.list.IsNull() {
			continue
		}
		if attr.list.IsUnknown() {
			b.unknownAt(attr.name)
			continue
		}
		if attr.name == "set_list" {
			out = append(out, b.setList(ctx, attr.name, attr.list)...)
			continue
		}
		var entries []setEntryModel
		b.diags.Append(attr.list.ElementsAs(ctx, &entries, false)...)
		for i, e := range entries {
			if e.Name.IsUnknown() || e.Value.IsUnknown() || e.Type.IsUnknown() {
				b.unknownAt(fielderr.Index(attr.name, i))
				continue
			}
			p := fielderr.Index(attr.name, i) + ".name"
			if e.Type.ValueString() == "json" && !attr.sensitive {
				p = fielderr.Index(attr.name, i) + ".value"
			}
			out = append(out, release.SetValue{Name: e.Name.ValueString(), Value: e.Value.ValueString(), Type: e.Type.ValueString(),
				Path: p, Sensitive: attr.sensitive})
		}
	}
	_, err := release.InlineValues(values, out)
	addError(&b.diags, "Invalid set value", err)
	return out
}

// setList translates the entries of set_list.
func (b *specBuilder) setList(ctx context.Context, name string, list types.List) []release.SetValue {
	var out []release.SetValue
	var entries []setListEntryModel
	b.diags.Append(list.ElementsAs(ctx, &entries, false)...)
	for i, e := range entries {
		if e.Name.IsUnknown() || e.Value.IsUnknown() {
			b.unknownAt(fielderr.Index(name, i))
			continue
		}
		s := release.SetValue{Name: e.Name.ValueString(), IsList: true, Path: fielderr.Index(name, i) + ".name"}
		for _, el := range e.Value.Elements() {
			sv, ok := el.(types.String)
			switch {
			case !ok || sv.IsNull():
			case sv.IsUnknown():
				b.unknownAt(fielderr.Index(name, i))
			default:
				s.List = append(s.List, sv.ValueString())
			}
		}
		out = append(out, s)
	}
	return out
}

// valuesDocument reads one document of `values`: an object, or a YAML string
// holding a mapping (an empty string is no values, as in helm_release).
func valuesDocument(v attr.Value) (map[string]any, error) {
	if s, ok := v.(types.String); ok {
		if s.IsUnknown() {
			return nil, errUnknownValue
		}
		return yamlMapping(s.ValueString())
	}
	g, err := goValue(v)
	if err != nil || g == nil {
		return nil, err
	}
	m, ok := g.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be an object or a YAML string holding a mapping, got %s", typeName(g))
	}
	return m, nil
}

// yamlMapping reads a YAML string that must hold a mapping; an empty one is
// no values. What it holds otherwise is said in HCL terms, not Go's.
func yamlMapping(text string) (map[string]any, error) {
	var doc any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("must be a YAML mapping: %w", err)
	}
	switch d := doc.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return d, nil
	}
	return nil, fmt.Errorf("must be a YAML mapping (or an object), got a YAML string holding %s", typeName(doc))
}

// errValuesDocument says which document of a values list failed.
type errValuesDocument struct {
	index int
	err   error
}

func (e *errValuesDocument) Error() string { return fmt.Sprintf("values[%d] %v", e.index, e.err) }
func (e *errValuesDocument) Unwrap() error { return e.err }

// valuesList reads a list (or tuple) of values documents, merged in order.
func valuesList(elems []attr.Value) (map[string]any, error) {
	var out map[string]any
	for i, el := range elems {
		doc, err := valuesDocument(el)
		if errors.Is(err, errUnknownValue) {
			return nil, err
		}
		if err != nil {
			return nil, &errValuesDocument{index: i, err: err}
		}
		if doc == nil {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out = release.MergeValues(out, doc)
	}
	return out, nil
}

// writeOnlyValues reads values_wo, an object or a YAML string as `values`.
// The value is secret: a parse error does not quote it.
func (b *specBuilder) writeOnlyValues(v types.Dynamic) map[string]any {
	if v.IsUnknown() || v.IsUnderlyingValueUnknown() {
		b.unknownAt("values_wo")
		return nil
	}
	if v.IsNull() || v.IsUnderlyingValueNull() {
		return nil
	}
	vals, err := valuesDocument(v.UnderlyingValue())
	if err = b.unknownIf("values_wo", err); err != nil {
		b.diags.AddAttributeError(path.Root("values_wo"), "Invalid values_wo",
			"values_wo must be an object, or a YAML string holding a mapping (details hidden: the value is write-only)")
	}
	return vals
}

// writeOnlyFromConfig puts the configuration's values_wo into m, whose
// values_wo (from a plan) is always null. setModel clears it again.
func writeOnlyFromConfig(ctx context.Context, cfg tfsdk.Config, m *helmReleaseModel) diag.Diagnostics {
	return cfg.GetAttribute(ctx, path.Root("values_wo"), &m.ValuesWO)
}

func valuesWOAttributes() (schema.DynamicAttribute, schema.Int64Attribute) {
	return schema.DynamicAttribute{
			Optional: true, WriteOnly: true,
			Description: "Write-only values (Terraform 1.11+, OpenTofu 1.11+): an object or a YAML string, merged last, over " +
				"`values_from`, `values` and the sets, as hashicorp/helm's `set_wo`. Terraform never stores it, in state or plan. " +
				"No digest covers it (`config_digest` leaves out the paths it sets), so a new value alone changes nothing: " +
				"change `values_wo_version` to upgrade the release with it. Removing it upgrades the release without it.",
		}, schema.Int64Attribute{
			Optional: true,
			Description: "Any new value upgrades the release with the current `values_wo` (the write-only value itself is never " +
				"compared, because it is never stored).",
		}
}
