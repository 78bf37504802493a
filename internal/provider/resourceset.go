package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
	_ resource.ResourceWithImportState    = (*resourceSetResource)(nil)
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
	id := m.Namespace.ValueString() + "/" + m.Name.ValueString()
	validateRenderConfig(&resp.Diagnostics, &m)
	validateDependencies(&resp.Diagnostics, m.Dependencies)
	if refs, strategy, known, diags := inputsFromFrom(ctx, m.InputsFrom, m.InputStrategy); known && !diags.HasError() {
		addError(&resp.Diagnostics, "Invalid inputs_from", fielderr.Object(resourceset.Kind, id, resourceset.ValidateInputsFrom(refs, strategy)))
	} else {
		resp.Diagnostics.Append(diags...)
	}
}

// validateRenderConfig checks, for the values known so far, what the set
// renders from: inputs, resources, resources_template and steps.
func validateRenderConfig(diags *diag.Diagnostics, m *resourceSetModel) {
	id := m.Namespace.ValueString() + "/" + m.Name.ValueString()
	if _, err := goObjects(m.Inputs, "inputs"); err != nil && !errors.Is(err, errUnknownValue) {
		addError(diags, "Invalid inputs", fielderr.Object(resourceset.Kind, id, err))
	}
	if _, err := goObjects(m.Resources, "resources"); err != nil && !errors.Is(err, errUnknownValue) {
		addError(diags, "Invalid resources", fielderr.Object(resourceset.Kind, id, err))
	}
	steps, err := stepsFrom(m.Steps)
	stepsKnown := !errors.Is(err, errUnknownValue)
	switch {
	case err != nil && stepsKnown:
		addError(diags, "Invalid steps", fielderr.Object(resourceset.Kind, id, err))
	case stepsKnown:
		err := resourceset.ValidateSteps(steps, !m.Resources.IsNull() || !m.ResourcesTemplate.IsNull())
		addError(diags, "Invalid steps", fielderr.Object(resourceset.Kind, id, err))
	}
	noSteps := m.Steps.IsNull() || (stepsKnown && err == nil && len(steps) == 0)
	if m.Resources.IsNull() && m.ResourcesTemplate.IsNull() && noSteps {
		addError(diags, "Nothing to apply", fielderr.Object(resourceset.Kind, id,
			fielderr.Errorf("resources", "set resources, resources_template or both, or steps")))
	}
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
	spec.InputsFrom, spec.InputStrategy = refs, strategy
	known, diags := b.result()
	return spec, known, diags
}

func (r *resourceSetResource) engine() *resourceset.Engine { return r.data.sets }

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
	spec.Owner, spec.Creating = readOwner(ctx, req.Private), state == nil
	// The inputs of inputs_from are read once, for the render and the
	// dry runs alike.
	spec, err := r.engine().ResolveInputs(ctx, spec)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot plan the resource set", err)
		return
	}
	res, err := r.engine().Plan(ctx, spec, prev)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot plan the resource set", err)
		return
	}
	for _, w := range res.Warnings {
		addWarning(&resp.Diagnostics, w.Summary, w.Path, fielderr.Object(resourceset.Kind, plan.ID.ValueString(), errors.New(w.Message)))
	}
	plan.Inventory = plannedInventoryValue(res.Inventory, res.Undecided, res.Steps)
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
		addError(&resp.Diagnostics, "Cannot plan the resource set", err)
		return
	}
	for _, w := range pv.Warnings {
		resp.Diagnostics.AddWarning("Apply may fail", about(resourceset.Kind, plan.ID.ValueString(), "%s", w))
	}
	if pv.Unknown != "" {
		// The plan's warnings said why (a service account that is missing).
		plan.Changes = types.ListUnknown(driftEntryType)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	if appeared := appearedSincePlan(res, prev, pv.Changes); len(appeared) > 0 {
		// Another apply created an object while this plan ran (between its
		// look-up and its dry run): plan the set again, which names the
		// owner. The same check at apply's final plan keeps that plan from
		// disagreeing with the first.
		_, err := r.engine().Plan(ctx, spec, prev)
		if err == nil {
			err = fielderr.Object(resourceset.Kind, plan.ID.ValueString(),
				fmt.Errorf("%s appeared while this plan ran (another apply created it); plan again", strings.Join(appeared, ", ")))
		}
		addError(&resp.Diagnostics, "Cannot plan the resource set", err)
		return
	}
	plan.Changes = driftValue(pv.Changes)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// appearedSincePlan lists the objects that res found missing (new to prev,
// not in the cluster at the look-up) but that the dry run found there.
func appearedSincePlan(res *resourceset.Result, prev []kube.Entry, changes []kube.Drift) []string {
	known := map[string]bool{}
	for _, en := range prev {
		known[en.ID] = true
	}
	created := map[string]bool{}
	for _, en := range res.Inventory {
		if !known[en.ID] && !res.Existing[en.ID] && !res.Undecided[en.ID] {
			created[en.ID] = true
		}
	}
	var out []string
	for _, c := range changes {
		if c.Type == "update" && created[c.ID] {
			out = append(out, c.ID)
		}
	}
	return out
}

// sameSettings compares the configuration that does not show in the rendered
// manifests.
func sameSettings(a, b *resourceSetModel) bool {
	if !a.InputsFrom.Equal(b.InputsFrom) || !a.InputStrategy.Equal(b.InputStrategy) {
		return false
	}
	if !a.Steps.Equal(b.Steps) || !a.Wait.Equal(b.Wait) || !a.Timeout.Equal(b.Timeout) || !a.ServiceAccountName.Equal(b.ServiceAccountName) ||
		!a.Force.Equal(b.Force) || !a.TakeOverFrom.Equal(b.TakeOverFrom) {
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
	// A new instance is a new owner, even over a name another
	// configuration uses: its objects carry the ID, and only objects that
	// carry it are the set's.
	owner := kube.NewOwnerID()
	inSync := r.apply(ctx, &plan, nil, nil, nil, owner, &resp.Diagnostics)
	if resp.Diagnostics.HasError() && len(plan.Inventory.Elements()) == 0 {
		// Refused before anything of the set was written (objects of
		// another owner, a claim another apply won): nothing is saved, so
		// there is nothing for a destroy to undo, and no tainted resource
		// whose replacement would plan over the other owner's objects.
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &plan)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, inSync)...)
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, owner)...)
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
	// A state written before owners were recorded stays without one: its
	// objects carry none, and the plan's dry runs did not add one.
	inSync := r.apply(ctx, &plan, prev, inventorySteps(ctx, state.Inventory), readFingerprints(ctx, req.Private), readOwner(ctx, req.Private), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &plan)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, inSync)...)
}

// apply runs the engine and fills m, the plan, with what really happened, also
// after a failure, so that the state saved with the error is the cluster's.
// prevSteps are the steps of prev's entries, and since the fingerprints of
// the objects the plan's refresh found in sync (private state): those not
// written since are not applied again. It returns the fingerprints of the
// objects in sync after the apply. owner is the instance's owner ID.
func (r *resourceSetResource) apply(ctx context.Context, m *resourceSetModel, prev []kube.Entry, prevSteps map[string]string, since kube.Fingerprints, owner string, diags *diag.Diagnostics) kube.Fingerprints {
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
		addError(diags, "Unknown values at apply", fielderr.Object(resourceset.Kind, m.ID.ValueString(), errors.New("inputs or resources are still unknown")))
	}
	if diags.HasError() {
		r.keepInventory(m, prev, prevSteps)
		return nil
	}
	spec.Owner = owner
	if len(spec.InputsFrom) > 0 && !m.Manifests.IsUnknown() && !m.Manifests.IsNull() {
		// The providers are read again: inputs exported since the plan
		// would apply objects the plan did not show.
		if resolved, err := r.engine().ResolveInputs(ctx, spec); err == nil {
			objs, err := r.engine().Desired(ctx, resolved)
			if err == nil {
				if got, err := resourceset.Manifests(objs); err == nil && got != m.Manifests.ValueString() {
					addError(diags, "Inputs changed since the plan", fielderr.Object(resourceset.Kind, m.ID.ValueString(), fielderr.Errorf("inputs_from",
						"the exported inputs of the ResourceSetInputProviders of inputs_from changed between plan and apply, "+
							"so the objects to apply are not those the plan showed; nothing was applied. Plan again.")))
					r.keepInventory(m, prev, prevSteps)
					m.Manifests = types.StringNull()
					return nil
				}
			}
			spec = resolved
		}
	}
	res, err := r.engine().Apply(ctx, spec, prev, resourceset.ApplyOptions{Planned: planned, Since: since})
	// An entry the set no longer renders keeps the step it was applied by.
	steps := maps.Clone(prevSteps)
	if steps == nil {
		steps = map[string]string{}
	}
	maps.Copy(steps, res.Steps)
	m.Inventory = inventoryValue(res.Inventory, steps)
	m.Manifests = types.StringValue(res.Manifests)
	m.Conditions = conditionsValue(res.Conditions)
	if err != nil {
		addError(diags, "Resource set apply failed", err)
	}
	return res.InSync
}

func (r *resourceSetResource) keepInventory(m *resourceSetModel, prev []kube.Entry, prevSteps map[string]string) {
	m.Inventory = inventoryValue(prev, prevSteps)
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
	// First, so that every way out has it.
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &state)...)
	if resp.Diagnostics.HasError() || r.data == nil || r.data.unknown {
		return
	}
	if state.InputsFrom.IsNull() {
		// State written before inputs_from existed: absent blocks are an
		// empty list in the configuration, so that a null would plan an
		// update.
		state.InputsFrom = types.ListValueMust(inputsFromElemType(), nil)
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	}
	spec, known, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	if !known || resp.Diagnostics.HasError() {
		return
	}
	spec.Owner = readOwner(ctx, req.Private)
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	report, err := r.engine().CheckDrift(ctx, spec, inv, readFingerprints(ctx, req.Private))
	if err != nil {
		resp.Diagnostics.AddWarning("Cannot check the resource set for drift", err.Error())
		return
	}
	state.Drift = driftValue(report.Drift)
	// The last apply's changes are history once refreshed: each plan shows
	// only its own.
	state.Changes = types.ListNull(driftEntryType)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
	resp.Diagnostics.Append(writeFingerprints(ctx, resp.Private, report.InSync)...)
}

func (r *resourceSetResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state resourceSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// State holds no unknown value; were one there, it would read as empty,
	// and the delete goes by the inventory.
	spec, _, diags := specFrom(ctx, &state)
	resp.Diagnostics.Append(diags...)
	spec.Owner = readOwner(ctx, req.Private)
	inv, diags := inventoryEntries(ctx, state.Inventory)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	remaining, err := r.engine().Delete(ctx, spec, inv)
	if err != nil {
		// Keep what is left in state, so that the next destroy tries again.
		state.Inventory = inventoryValue(remaining, inventorySteps(ctx, state.Inventory))
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		addError(&resp.Diagnostics, "Resource set delete failed", err)
	}
}

// ImportState brings a set's objects under this resource: `<namespace>/<name>`
// finds the objects that carry the set's owner labels, in every kind the
// cluster serves, with the owner ID they carry (one instance's only). It is
// the recovery of a create that was killed before it saved state: its objects
// carry an owner ID nothing else can prove is this resource's. Objects the
// set adopted (their adoption record says so) stay adopted, so that destroy
// deletes only what the set created. The configuration fills in the rest at
// the next plan.
//
// An import block's identity (namespace, name) names the same as the ID.
func (r *resourceSetResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importID := req.ID
	if importID == "" && req.Identity != nil {
		var diags diag.Diagnostics
		importID, diags = resourceSetImportID(ctx, req.Identity)
		if resp.Diagnostics.Append(diags...); resp.Diagnostics.HasError() {
			return
		}
	}
	ns, name, ok := strings.Cut(importID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		resp.Diagnostics.AddError("Invalid import ID", fmt.Sprintf("import ID %q: want <namespace>/<name>", importID))
		return
	}
	if r.data == nil || r.data.unknown {
		resp.Diagnostics.AddError("Provider not configured", "import needs a known provider configuration")
		return
	}
	imp, err := r.engine().Import(ctx, ns, name)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot import the resource set", err)
		return
	}
	m := resourceSetModel{
		ID: types.StringValue(importID), Name: types.StringValue(name), Namespace: types.StringValue(ns),
		Inputs: types.DynamicNull(), Resources: types.DynamicNull(), ResourcesTemplate: types.StringNull(), Steps: types.DynamicNull(),
		Wait: types.BoolValue(false), Timeout: types.StringValue(durationText(resourceset.DefaultTimeout)), ServiceAccountName: types.StringNull(), Force: types.BoolValue(false),
		TakeOverFrom: types.ListNull(types.StringType), InputsFrom: types.ListValueMust(inputsFromElemType(), nil),
		InputStrategy: types.ObjectNull(inputStrategyAttrTypes()),
		Inventory:     inventoryValue(imp.Inventory, nil), Manifests: types.StringNull(),
		Drift: types.ListValueMust(driftEntryType, nil), Changes: types.ListNull(driftEntryType), Conditions: types.ListNull(conditionType),
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	resp.Diagnostics.Append(setResourceSetIdentity(ctx, resp.Identity, &m)...)
	resp.Diagnostics.Append(writeOwner(ctx, resp.Private, imp.Owner)...)
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
	Name types.String `tfsdk:"name"`
}

// inputsFromElemType is the type of an `inputs_from` block.
func inputsFromElemType() attr.Type {
	return resourceSetSchema().Blocks["inputs_from"].Type().(types.ListType).ElemType
}

// inputsFromFrom reads the `inputs_from` blocks and `input_strategy`; known
// is false when a value in them is not known yet.
func inputsFromFrom(ctx context.Context, list types.List, strategy types.Object) (refs []resourceset.InputsFrom, name string, known bool, diags diag.Diagnostics) {
	if list.IsUnknown() || strategy.IsUnknown() {
		return nil, "", false, nil
	}
	if !strategy.IsNull() {
		var sm inputStrategyModel
		if diags.Append(strategy.As(ctx, &sm, basetypes.ObjectAsOptions{})...); diags.HasError() {
			return nil, "", true, diags
		}
		if sm.Name.IsUnknown() {
			return nil, "", false, diags
		}
		name = sm.Name.ValueString()
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
