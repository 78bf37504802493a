package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// NewResourceSetResource is the stevedore_resourceset resource.
func NewResourceSetResource() resource.Resource { return &resourceSetResource{} }

type resourceSetResource struct {
	data *providerData
}

var (
	_ resource.ResourceWithConfigure      = (*resourceSetResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*resourceSetResource)(nil)
	_ resource.ResourceWithValidateConfig = (*resourceSetResource)(nil)
	_ resource.ResourceWithUpgradeState   = (*resourceSetResource)(nil)
)

type resourceSetModel struct {
	ID                 types.String         `tfsdk:"id"`
	Name               types.String         `tfsdk:"name"`
	Namespace          types.String         `tfsdk:"namespace"`
	Inputs             types.Dynamic        `tfsdk:"inputs"`
	Resources          types.Dynamic        `tfsdk:"resources"`
	ResourcesTemplate  types.String         `tfsdk:"resources_template"`
	Wait               types.Bool           `tfsdk:"wait"`
	Timeout            types.String         `tfsdk:"timeout"`
	ServiceAccountName types.String         `tfsdk:"service_account_name"`
	Force              types.Bool           `tfsdk:"force"`
	CommonMetadata     *commonMetadataModel `tfsdk:"common_metadata"`
	Dependencies       []dependencyModel    `tfsdk:"dependencies"`
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

func (r *resourceSetResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_resourceset"
}

func (r *resourceSetResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = resourceSetSchema()
}

func (r *resourceSetResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req, resp)
}

// ValidateConfig reports what needs no cluster: the shape of inputs and
// resources, and dependencies whose CEL does not compile.
func (r *resourceSetResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m resourceSetModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, err := goObjects(m.Inputs, "inputs"); err != nil && !errors.Is(err, errUnknownValue) {
		resp.Diagnostics.AddAttributeError(path.Root("inputs"), "Invalid inputs", err.Error())
	}
	if _, err := goObjects(m.Resources, "resources"); err != nil && !errors.Is(err, errUnknownValue) {
		resp.Diagnostics.AddAttributeError(path.Root("resources"), "Invalid resources", err.Error())
	}
	if m.Resources.IsNull() && m.ResourcesTemplate.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("resources"), "Nothing to apply", "set resources, resources_template or both")
	}
	validateDependencies(&resp.Diagnostics, m.Dependencies)
}

// specFrom builds the engine's spec; known is false when a value it needs is
// not known yet.
func specFrom(ctx context.Context, m *resourceSetModel) (spec *resourceset.Spec, known bool, diags diag.Diagnostics) {
	for _, v := range []attr.Value{m.Name, m.Namespace, m.Inputs, m.Resources, m.ResourcesTemplate, m.Wait, m.Timeout, m.ServiceAccountName, m.Force} {
		if v.IsUnknown() {
			return nil, false, nil
		}
	}
	spec = &resourceset.Spec{
		Name:               m.Name.ValueString(),
		Namespace:          m.Namespace.ValueString(),
		ResourcesTemplate:  m.ResourcesTemplate.ValueString(),
		Wait:               m.Wait.ValueBool(),
		ServiceAccountName: m.ServiceAccountName.ValueString(),
		Force:              m.Force.ValueBool(),
		Timeout:            resourceset.DefaultTimeout,
	}
	var err error
	if spec.Inputs, err = goObjects(m.Inputs, "inputs"); err != nil {
		if errors.Is(err, errUnknownValue) {
			return nil, false, nil
		}
		diags.AddAttributeError(path.Root("inputs"), "Invalid inputs", err.Error())
	}
	if spec.Resources, err = goObjects(m.Resources, "resources"); err != nil {
		if errors.Is(err, errUnknownValue) {
			return nil, false, nil
		}
		diags.AddAttributeError(path.Root("resources"), "Invalid resources", err.Error())
	}
	if t := m.Timeout.ValueString(); t != "" {
		if spec.Timeout, err = time.ParseDuration(t); err != nil {
			diags.AddAttributeError(path.Root("timeout"), "Invalid timeout", err.Error())
		}
	}
	if cm := m.CommonMetadata; cm != nil {
		if cm.Labels.IsUnknown() || cm.Annotations.IsUnknown() {
			return nil, false, diags
		}
		spec.CommonMetadata.Labels = stringMap(cm.Labels)
		spec.CommonMetadata.Annotations = stringMap(cm.Annotations)
	}
	deps, depsKnown := dependenciesFrom(m.Dependencies)
	if !depsKnown {
		return nil, false, diags
	}
	spec.Dependencies = deps
	return spec, true, diags
}

// renderDiagnostic turns an engine error into a diagnostic on the attribute
// that caused it.
func renderDiagnostic(diags *diag.Diagnostics, summary string, err error, id string) {
	var re *resourceset.RenderError
	var oe *resourceset.OwnershipError
	var pe *resourceset.PreviewError
	switch {
	case errors.As(err, &re):
		p := path.Root(re.Attribute)
		if re.Index >= 0 {
			p = p.AtListIndex(re.Index)
		}
		diags.AddAttributeError(p, summary, fmt.Sprintf("resourceset %s: %v", id, err))
	case errors.As(err, &oe):
		diags.AddAttributeError(path.Root(oe.Attribute), summary, fmt.Sprintf("resourceset %s: %v", id, err))
	case errors.As(err, &pe):
		diags.AddError(summary, fmt.Sprintf("resourceset %s: %v", id, pe))
	case errors.Is(err, resourceset.ErrUnknownKind):
		diags.AddAttributeError(path.Root("resources"), summary, fmt.Sprintf("resourceset %s: %v", id, err))
	default:
		var de *kube.DependencyError
		if errors.As(err, &de) {
			diags.AddAttributeError(dependencyPath(de), summary,
				fmt.Sprintf("resourceset %s: %v", id, err))
			return
		}
		diags.AddError(summary, fmt.Sprintf("resourceset %s: %v", id, err))
	}
}

func (r *resourceSetResource) engine() *resourceset.Engine { return resourceset.New(r.data.kube) }

// ModifyPlan renders the set at plan time so that the objects to create and to
// prune show as inventory changes and the rendered manifests as a diff. Drift
// found at refresh is planned away (drift -> []). Entries of the prior
// inventory keep their `adopted`; the engine reads the objects new to it from
// the cluster to plan theirs, and refuses objects owned by another set.
func (r *resourceSetResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *resourceSetModel
	if !req.State.Raw.IsNull() {
		state = &resourceSetModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
	}

	emptyDrift := types.ListValueMust(driftEntryType, nil)
	plan.Drift = emptyDrift
	if !plan.Name.IsUnknown() && !plan.Namespace.IsUnknown() {
		plan.ID = types.StringValue(plan.Namespace.ValueString() + "/" + plan.Name.ValueString())
	}

	spec, known, diags := specFrom(ctx, &plan)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !known || r.data == nil || r.data.unknown {
		plan.Inventory = types.ListUnknown(inventoryEntryType)
		plan.Manifests = types.StringUnknown()
		plan.Conditions = types.ListUnknown(conditionType)
		plan.Changes = types.ListUnknown(driftEntryType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	var prev []kube.Entry
	if state != nil {
		prev, diags = inventoryEntries(ctx, state.Inventory)
		resp.Diagnostics.Append(diags...)
	}
	res, err := r.engine().Plan(ctx, spec, prev)
	if err != nil {
		renderDiagnostic(&resp.Diagnostics, "Cannot plan the resource set", err, spec.Namespace+"/"+spec.Name)
		return
	}
	for _, w := range res.Warnings {
		detail := fmt.Sprintf("resourceset %s: %s", plan.ID.ValueString(), w.Message)
		if w.Attribute == "" {
			resp.Diagnostics.AddWarning(w.Summary, detail)
			continue
		}
		p := path.Root(w.Attribute)
		if w.Index >= 0 {
			p = p.AtListIndex(w.Index)
		}
		resp.Diagnostics.AddAttributeWarning(p, w.Summary, detail)
	}
	plan.Inventory = plannedInventoryValue(res.Inventory, res.Undecided)
	plan.Manifests = types.StringValue(res.Manifests)

	unchanged := state != nil && state.Drift.Equal(emptyDrift) && state.Inventory.Equal(plan.Inventory) &&
		state.Manifests.Equal(plan.Manifests) && sameSettings(state, &plan)
	if unchanged {
		plan.Conditions, plan.Changes = state.Conditions, state.Changes
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.Conditions = types.ListUnknown(conditionType)
	if len(res.Undecided) > 0 {
		// Objects of an earlier incarnation of this set (a replace after a
		// failed create): the destroy that comes first in the same apply
		// changes them, so what the apply then does is not known yet.
		plan.Changes = types.ListUnknown(driftEntryType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	// What the apply changes, object by object: dry runs, only when the
	// set changes (a steady plan makes none).
	pv, err := r.engine().Preview(ctx, spec)
	if err != nil {
		renderDiagnostic(&resp.Diagnostics, "Cannot plan the resource set", err, spec.Namespace+"/"+spec.Name)
		return
	}
	for _, w := range pv.Warnings {
		resp.Diagnostics.AddWarning("Apply may fail", fmt.Sprintf("resourceset %s: %s", plan.ID.ValueString(), w))
	}
	plan.Changes = driftValue(pv.Changes)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// sameSettings compares the configuration that does not show in the rendered
// manifests.
func sameSettings(a, b *resourceSetModel) bool {
	if !a.Wait.Equal(b.Wait) || !a.Timeout.Equal(b.Timeout) || !a.ServiceAccountName.Equal(b.ServiceAccountName) || !a.Force.Equal(b.Force) {
		return false
	}
	if len(a.Dependencies) != len(b.Dependencies) {
		return false
	}
	for i := range a.Dependencies {
		if a.Dependencies[i] != b.Dependencies[i] {
			return false
		}
	}
	return true
}

func (r *resourceSetResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, nil, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *resourceSetResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state resourceSetModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	prev, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	r.apply(ctx, &plan, prev, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// apply runs the engine and fills m, the plan, with what really happened, also
// after a failure, so that the state saved with the error is the cluster's.
func (r *resourceSetResource) apply(ctx context.Context, m *resourceSetModel, prev []kube.Entry, diags *diag.Diagnostics) {
	planned, d := plannedAdoptions(ctx, m.Inventory)
	diags.Append(d...)
	m.ID = types.StringValue(m.Namespace.ValueString() + "/" + m.Name.ValueString())
	m.Drift = types.ListValueMust(driftEntryType, nil)
	if m.Changes.IsUnknown() {
		// The plan could not tell: apply does not dry-run to find out.
		m.Changes = types.ListNull(driftEntryType)
	}
	spec, known, d := specFrom(ctx, m)
	diags.Append(d...)
	if !known && !diags.HasError() {
		diags.AddError("Unknown values at apply", "resourceset "+m.ID.ValueString()+": inputs or resources are still unknown")
	}
	if diags.HasError() {
		r.keepInventory(m, prev)
		return
	}
	res, err := r.engine().Apply(ctx, spec, prev, planned)
	m.Inventory = inventoryValue(res.Inventory)
	m.Manifests = types.StringValue(res.Manifests)
	m.Conditions = conditionsValue(res.Conditions)
	if err != nil {
		renderDiagnostic(diags, "Resource set apply failed", err, m.ID.ValueString())
	}
}

func (r *resourceSetResource) keepInventory(m *resourceSetModel, prev []kube.Entry) {
	m.Inventory = inventoryValue(prev)
	if m.Manifests.IsUnknown() {
		m.Manifests = types.StringNull()
	}
	if m.Conditions.IsUnknown() {
		m.Conditions = types.ListNull(conditionType)
	}
}

// Read refreshes the drift: each object the set renders and owns is dry-run
// applied, and the objects that changed or are gone are recorded.
func (r *resourceSetResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state resourceSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.data == nil || r.data.unknown {
		return
	}
	spec, known, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	drift, err := r.engine().Drift(ctx, spec, inv)
	if err != nil {
		resp.Diagnostics.AddWarning("Cannot check the resource set for drift",
			fmt.Sprintf("resourceset %s: %v", state.ID.ValueString(), err))
		return
	}
	state.Drift = driftValue(drift)
	// The last apply's changes are history once refreshed: each plan shows
	// only its own.
	state.Changes = types.ListNull(driftEntryType)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *resourceSetResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state resourceSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, known, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if !known {
		spec = &resourceset.Spec{Name: state.Name.ValueString(), Namespace: state.Namespace.ValueString(), Timeout: resourceset.DefaultTimeout}
	}
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	remaining, err := r.engine().Delete(ctx, spec, inv)
	if err != nil {
		// Keep what is left in state, so that the next destroy tries again.
		state.Inventory = inventoryValue(remaining)
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		resp.Diagnostics.AddError("Resource set delete failed", fmt.Sprintf("resourceset %s: %v", state.ID.ValueString(), err))
	}
}

func inventoryValue(entries []kube.Entry) types.List {
	return plannedInventoryValue(entries, nil)
}

// plannedInventoryValue is the inventory with `adopted` unknown for the IDs in
// undecided.
func plannedInventoryValue(entries []kube.Entry, undecided map[string]bool) types.List {
	vals := make([]attr.Value, 0, len(entries))
	for _, e := range entries {
		adopted := types.BoolValue(e.Adopted)
		if undecided[e.ID] {
			adopted = types.BoolUnknown()
		}
		vals = append(vals, types.ObjectValueMust(inventoryEntryType.AttrTypes, map[string]attr.Value{
			"id": types.StringValue(e.ID), "v": types.StringValue(e.V), "adopted": adopted,
		}))
	}
	return types.ListValueMust(inventoryEntryType, vals)
}

type inventoryEntryModel struct {
	ID      types.String `tfsdk:"id"`
	V       types.String `tfsdk:"v"`
	Adopted types.Bool   `tfsdk:"adopted"`
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

// UpgradeState reads state written before inventory entries had `adopted`:
// those entries read as not adopted, which is how that version treated every
// object. The framework would fill the missing attribute with null, which no
// apply returns, so every set would plan an update once.
func (r *resourceSetResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: {StateUpgrader: upgradeResourceSetStateV0},
	}
}

func upgradeResourceSetStateV0(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	var state map[string]json.RawMessage
	if err := json.Unmarshal(req.RawState.JSON, &state); err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the resource set state", err.Error())
		return
	}
	if inv, ok := state["inventory"]; ok && string(inv) != "null" {
		var entries []map[string]json.RawMessage
		if err := json.Unmarshal(inv, &entries); err != nil {
			resp.Diagnostics.AddError("Cannot upgrade the resource set state", "inventory: "+err.Error())
			return
		}
		for _, en := range entries {
			if _, ok := en["adopted"]; !ok {
				en["adopted"] = json.RawMessage("false")
			}
		}
		b, err := json.Marshal(entries)
		if err != nil {
			resp.Diagnostics.AddError("Cannot upgrade the resource set state", "inventory: "+err.Error())
			return
		}
		state["inventory"] = b
	}
	b, err := json.Marshal(state)
	if err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the resource set state", err.Error())
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
}

func driftValue(drift []kube.Drift) types.List {
	vals := make([]attr.Value, 0, len(drift))
	for _, d := range drift {
		changes := make([]attr.Value, 0, len(d.Changes))
		for _, c := range d.Changes {
			changes = append(changes, types.ObjectValueMust(driftChangeType.AttrTypes, map[string]attr.Value{
				"op": types.StringValue(c.Op), "path": types.StringValue(c.Path),
				"from": types.StringValue(c.From), "to": types.StringValue(c.To),
			}))
		}
		vals = append(vals, types.ObjectValueMust(driftEntryType.AttrTypes, map[string]attr.Value{
			"id": types.StringValue(d.ID), "type": types.StringValue(d.Type),
			"changes": types.ListValueMust(driftChangeType, changes),
		}))
	}
	return types.ListValueMust(driftEntryType, vals)
}

// conditionsValue is the engines' conditions as the `conditions` attribute.
func conditionsValue(conds []kube.Condition) types.List {
	vals := make([]attr.Value, 0, len(conds))
	for _, c := range conds {
		vals = append(vals, types.ObjectValueMust(conditionType.AttrTypes, map[string]attr.Value{
			"type": types.StringValue(c.Type), "status": types.StringValue(c.Status),
			"reason": types.StringValue(c.Reason), "message": types.StringValue(c.Message),
		}))
	}
	return types.ListValueMust(conditionType, vals)
}
