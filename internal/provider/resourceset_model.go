package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

type resourceSetModel struct {
	ID                 types.String         `tfsdk:"id"`
	Name               types.String         `tfsdk:"name"`
	Namespace          types.String         `tfsdk:"namespace"`
	Inputs             types.Dynamic        `tfsdk:"inputs"`
	Resources          types.Dynamic        `tfsdk:"resources"`
	ResourcesTemplate  types.String         `tfsdk:"resources_template"`
	Steps              types.Dynamic        `tfsdk:"steps"`
	Wait               types.Bool           `tfsdk:"wait"`
	Timeout            types.String         `tfsdk:"timeout"`
	ServiceAccountName types.String         `tfsdk:"service_account_name"`
	Force              types.Bool           `tfsdk:"force"`
	Suspend            types.Bool           `tfsdk:"suspend"`
	TakeOverFrom       types.List           `tfsdk:"take_over_from"`
	CommonMetadata     *commonMetadataModel `tfsdk:"common_metadata"`
	Dependencies       []dependencyModel    `tfsdk:"dependencies"`
	InputsFrom         types.List           `tfsdk:"inputs_from"`
	InputStrategy      types.Object         `tfsdk:"input_strategy"`
	Inventory          types.List           `tfsdk:"inventory"`
	Manifests          types.String         `tfsdk:"manifests"`
	Drift              types.List           `tfsdk:"drift"`
	Changes            types.List           `tfsdk:"changes"`
	Conditions         types.List           `tfsdk:"conditions"`
}

type commonMetadataModel struct {
	Labels      types.Map `tfsdk:"labels"`
	Annotations types.Map `tfsdk:"annotations"`
}

// stepsFrom reads the `steps` attribute, a list of objects with name,
// timeout, resources and resources_template. Its errors are *fielderr.Error,
// joined, on the step's attribute (`steps[1].timeout`), or on `steps`.
func stepsFrom(v attr.Value) ([]resourceset.Step, error) {
	list, err := goObjects(v, "steps")
	if errors.Is(err, errUnknownValue) {
		return nil, err
	}
	if err != nil {
		return nil, fielderr.Wrap("steps", err)
	}
	out := make([]resourceset.Step, len(list))
	var errs []error
	for i, m := range list {
		out[i].Name, _ = m["name"].(string)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := setStepField(&out[i], k, m[k]); err != nil {
				errs = append(errs, resourceset.StepFieldError(i, out[i].Name, k, err))
			}
		}
	}
	return out, errors.Join(errs...)
}

// setStepField sets the field k of st to v, a value of the configuration.
func setStepField(st *resourceset.Step, k string, v any) error {
	var err error
	switch k {
	case "name":
		if _, ok := v.(string); !ok {
			err = fmt.Errorf("name must be a string, got %s", typeName(v))
		}
	case "timeout":
		if v == nil {
			return nil
		}
		t, ok := v.(string)
		if !ok {
			return fmt.Errorf("timeout must be a Go duration string, got %s", typeName(v))
		}
		st.Timeout, err = time.ParseDuration(t)
	case "resources":
		list, ok := v.([]any)
		if !ok && v != nil {
			return fmt.Errorf("resources must be a list of objects, got %s", typeName(v))
		}
		for j, it := range list {
			o, ok := it.(map[string]any)
			if !ok {
				return fmt.Errorf("resources[%d] must be an object, got %s", j, typeName(it))
			}
			st.Resources = append(st.Resources, o)
		}
	case "resources_template":
		if v == nil {
			return nil
		}
		t, ok := v.(string)
		if !ok {
			return fmt.Errorf("resources_template must be a string, got %s", typeName(v))
		}
		st.ResourcesTemplate = t
	default:
		err = fmt.Errorf("unknown attribute %q: a step has name, timeout, resources and resources_template", k)
	}
	return err
}

// specFrom builds the engine's spec; known is false when a value it needs is
// not known yet.
func specFrom(ctx context.Context, m *resourceSetModel) (*resourceset.Spec, bool, diag.Diagnostics) {
	b := newSpecBuilder()
	spec := &resourceset.Spec{
		Name:               b.str("name", m.Name),
		Namespace:          b.str("namespace", m.Namespace),
		ResourcesTemplate:  b.str("resources_template", m.ResourcesTemplate),
		Wait:               b.boolean("wait", m.Wait),
		Timeout:            b.duration("timeout", m.Timeout),
		ServiceAccountName: b.str("service_account_name", m.ServiceAccountName),
		Force:              b.boolean("force", m.Force),
		TakeOverFrom:       b.strings("take_over_from", m.TakeOverFrom),
		Dependencies:       b.dependencies(m.Dependencies),
	}
	invalid := func(summary string, err error) {
		addError(&b.diags, summary, fielderr.Object(resourceset.Kind, spec.Namespace+"/"+spec.Name, err))
	}
	var err error
	spec.Inputs, err = b.objects("inputs", m.Inputs)
	invalid("Invalid inputs", err)
	spec.Resources, err = b.objects("resources", m.Resources)
	invalid("Invalid resources", err)
	spec.Steps, err = stepsFrom(m.Steps)
	invalid("Invalid steps", b.unknownIf("steps", err))
	if cm := m.CommonMetadata; cm != nil {
		spec.CommonMetadata.Labels = b.stringMap("common_metadata.labels", cm.Labels)
		spec.CommonMetadata.Annotations = b.stringMap("common_metadata.annotations", cm.Annotations)
	}
	refs, strategy, known, d := inputsFromFrom(ctx, m.InputsFrom, m.InputStrategy)
	b.diags.Append(d...)
	if !known {
		b.unknownAt("inputs_from")
	}
	spec.InputsFrom, spec.InputStrategy, spec.IncludeEmptyProviders = refs, strategy.name, strategy.includeEmpty
	known, diags := b.result()
	return spec, known, diags
}

// inventoryValue is the inventory with the step of each entry in steps
// (none or "": null).
func inventoryValue(entries []kube.Entry, steps map[string]string) types.List {
	return plannedInventoryValue(entries, nil, steps)
}

// plannedInventoryValue is inventoryValue with `adopted` unknown for the IDs
// in undecided.
func plannedInventoryValue(entries []kube.Entry, undecided map[string]bool, steps map[string]string) types.List {
	vals := make([]attr.Value, 0, len(entries))
	for _, e := range entries {
		adopted := types.BoolValue(e.Adopted)
		if undecided[e.ID] {
			adopted = types.BoolUnknown()
		}
		step := types.StringNull()
		if name := steps[e.ID]; name != "" {
			step = types.StringValue(name)
		}
		vals = append(vals, types.ObjectValueMust(inventoryEntryType.AttrTypes, map[string]attr.Value{
			"id": types.StringValue(e.ID), "v": types.StringValue(e.V), "adopted": adopted, "step": step,
		}))
	}
	return types.ListValueMust(inventoryEntryType, vals)
}

type inventoryEntryModel struct {
	ID      types.String `tfsdk:"id"`
	V       types.String `tfsdk:"v"`
	Adopted types.Bool   `tfsdk:"adopted"`
	Step    types.String `tfsdk:"step"`
}

// inventorySteps maps the IDs of an inventory's entries to their steps.
func inventorySteps(ctx context.Context, l types.List) map[string]string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var raw []inventoryEntryModel
	if diags := l.ElementsAs(ctx, &raw, false); diags.HasError() {
		return nil
	}
	out := make(map[string]string, len(raw))
	for _, e := range raw {
		out[e.ID.ValueString()] = e.Step.ValueString()
	}
	return out
}

func inventoryEntries(ctx context.Context, l types.List) ([]kube.Entry, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var raw []inventoryEntryModel
	diags := l.ElementsAs(ctx, &raw, false)
	out := make([]kube.Entry, 0, len(raw))
	for _, e := range raw {
		out = append(out, kube.Entry{ID: e.ID.ValueString(), V: e.V.ValueString(), Adopted: e.Adopted.ValueBool()})
	}
	return out, diags
}

// plannedAdoptions are the known `adopted` values of a planned inventory; an
// unknown inventory has none.
func plannedAdoptions(ctx context.Context, l types.List) (resourceset.Adoptions, diag.Diagnostics) {
	if l.IsNull() || l.IsUnknown() {
		return nil, nil
	}
	var raw []inventoryEntryModel
	diags := l.ElementsAs(ctx, &raw, false)
	out := resourceset.Adoptions{}
	for _, e := range raw {
		if !e.Adopted.IsUnknown() && !e.Adopted.IsNull() {
			out[e.ID.ValueString()] = e.Adopted.ValueBool()
		}
	}
	return out, diags
}

type inputsFromModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Kind       types.String `tfsdk:"kind"`
	Name       types.String `tfsdk:"name"`
	Selector   types.Object `tfsdk:"selector"`
}

type labelSelectorModel struct {
	MatchLabels      types.Map  `tfsdk:"match_labels"`
	MatchExpressions types.List `tfsdk:"match_expressions"`
}

type selectorRequirementModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   types.List   `tfsdk:"values"`
}

type inputStrategyModel struct {
	Name                  types.String `tfsdk:"name"`
	IncludeEmptyProviders types.Bool   `tfsdk:"include_empty_providers"`
}

// inputStrategy is the `input_strategy` block as the engine takes it.
type inputStrategy struct {
	name         string
	includeEmpty bool
}

// inputsFromElemType is the type of an `inputs_from` block.
func inputsFromElemType() attr.Type {
	return resourceSetSchema().Blocks["inputs_from"].Type().(types.ListType).ElemType
}

// inputsFromFrom reads the `inputs_from` blocks and `input_strategy`; known
// is false when a value in them is not known yet.
func inputsFromFrom(ctx context.Context, list types.List, strategy types.Object) (refs []resourceset.InputsFrom, name inputStrategy, known bool, diags diag.Diagnostics) {
	if list.IsUnknown() || strategy.IsUnknown() {
		return nil, name, false, nil
	}
	if !strategy.IsNull() {
		var sm inputStrategyModel
		if diags.Append(strategy.As(ctx, &sm, basetypes.ObjectAsOptions{})...); diags.HasError() {
			return nil, name, true, diags
		}
		if sm.Name.IsUnknown() || sm.IncludeEmptyProviders.IsUnknown() {
			return nil, name, false, diags
		}
		name = inputStrategy{name: sm.Name.ValueString(), includeEmpty: sm.IncludeEmptyProviders.ValueBool()}
	}
	if list.IsNull() {
		return nil, name, true, diags
	}
	var raw []inputsFromModel
	if diags.Append(list.ElementsAs(ctx, &raw, false)...); diags.HasError() {
		return nil, name, true, diags
	}
	for _, r := range raw {
		for _, v := range []attr.Value{r.APIVersion, r.Kind, r.Name, r.Selector} {
			if v.IsUnknown() {
				return nil, name, false, diags
			}
		}
		ref := resourceset.InputsFrom{APIVersion: r.APIVersion.ValueString(), Kind: r.Kind.ValueString(), Name: r.Name.ValueString()}
		if !r.Selector.IsNull() {
			sel, ok, d := labelSelectorFrom(ctx, r.Selector)
			if diags.Append(d...); diags.HasError() {
				return nil, name, true, diags
			}
			if !ok {
				return nil, name, false, diags
			}
			ref.Selector = sel
		}
		refs = append(refs, ref)
	}
	return refs, name, true, diags
}

// labelSelectorFrom reads a `selector` block; ok is false when a value in it
// is not known yet.
func labelSelectorFrom(ctx context.Context, o types.Object) (*metav1.LabelSelector, bool, diag.Diagnostics) {
	var sm labelSelectorModel
	diags := o.As(ctx, &sm, basetypes.ObjectAsOptions{})
	if diags.HasError() {
		return nil, true, diags
	}
	if sm.MatchLabels.IsUnknown() || sm.MatchExpressions.IsUnknown() {
		return nil, false, diags
	}
	sel := &metav1.LabelSelector{}
	for k, v := range sm.MatchLabels.Elements() {
		s, ok := v.(types.String)
		if !ok || s.IsUnknown() {
			return nil, false, diags
		}
		if sel.MatchLabels == nil {
			sel.MatchLabels = map[string]string{}
		}
		sel.MatchLabels[k] = s.ValueString()
	}
	var exprs []selectorRequirementModel
	if !sm.MatchExpressions.IsNull() {
		if diags.Append(sm.MatchExpressions.ElementsAs(ctx, &exprs, false)...); diags.HasError() {
			return nil, true, diags
		}
	}
	for _, e := range exprs {
		if e.Key.IsUnknown() || e.Operator.IsUnknown() || e.Values.IsUnknown() {
			return nil, false, diags
		}
		req := metav1.LabelSelectorRequirement{Key: e.Key.ValueString(), Operator: metav1.LabelSelectorOperator(e.Operator.ValueString())}
		for _, v := range e.Values.Elements() {
			s, ok := v.(types.String)
			if !ok || s.IsUnknown() {
				return nil, false, diags
			}
			req.Values = append(req.Values, s.ValueString())
		}
		sel.MatchExpressions = append(sel.MatchExpressions, req)
	}
	return sel, true, diags
}

// inputStrategyAttrTypes are the attribute types of the input_strategy block.
func inputStrategyAttrTypes() map[string]attr.Type {
	var s resource.SchemaResponse
	(&resourceSetResource{}).Schema(context.Background(), resource.SchemaRequest{}, &s)
	return s.Schema.Blocks["input_strategy"].Type().(types.ObjectType).AttrTypes
}
