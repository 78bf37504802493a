package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
		addError(&resp.Diagnostics, "Invalid inputs_from", fielderr.Object(resourceset.Kind, id, resourceset.ValidateInputsFrom(refs, strategy.name, strategy.includeEmpty)))
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

func (r *resourceSetResource) engine() *resourceset.Engine { return r.data.sets }

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
		addError(&resp.Diagnostics, "Cannot upgrade the resource set state", err)
		return
	}
	if inv, ok := state["inventory"]; ok && string(inv) != "null" {
		var entries []map[string]json.RawMessage
		if err := json.Unmarshal(inv, &entries); err != nil {
			addError(&resp.Diagnostics, "Cannot upgrade the resource set state", fmt.Errorf("inventory: %w", err))
			return
		}
		for _, en := range entries {
			if _, ok := en["adopted"]; !ok {
				en["adopted"] = json.RawMessage("false")
			}
		}
		b, err := json.Marshal(entries)
		if err != nil {
			addError(&resp.Diagnostics, "Cannot upgrade the resource set state", fmt.Errorf("inventory: %w", err))
			return
		}
		state["inventory"] = b
	}
	b, err := json.Marshal(state)
	if err != nil {
		addError(&resp.Diagnostics, "Cannot upgrade the resource set state", err)
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
}
