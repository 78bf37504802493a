package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// releaseStatusType is the type of the `status` attribute: the Helm status
// and the dates of the latest release. What else Flux keeps in a
// HelmRelease's status (history, conditions, failure counters, the last
// action attempted) is the engine's bookkeeping, in private state
// (releaseBook).
var releaseStatusType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"release_status": types.StringType,
	"first_deployed": types.StringType,
	"last_deployed":  types.StringType,
	"apply_method":   types.StringType,
}}

// statusFields are the model's fields behind `status`, by attribute name.
func (m *helmReleaseModel) statusFields() map[string]attr.Value {
	return map[string]attr.Value{
		"release_status": m.Status,
		"first_deployed": m.FirstDeployed,
		"last_deployed":  m.LastDeployed,
		"apply_method":   m.ApplyMethod,
	}
}

// packStatus sets `status` from the model's fields: unknown when all of them
// are (a plan that installs or upgrades), null when all are null, else an
// object whose unknown fields are those the plan cannot tell.
func (m *helmReleaseModel) packStatus() {
	fields := m.statusFields()
	unknown, null := true, true
	for name, v := range fields {
		if v == nil || v.IsNull() {
			fields[name] = types.StringNull()
			unknown = false
			continue
		}
		null = false
		if !v.IsUnknown() {
			unknown = false
		}
	}
	switch {
	case unknown:
		m.StatusObject = types.ObjectUnknown(releaseStatusType.AttrTypes)
	case null:
		m.StatusObject = types.ObjectNull(releaseStatusType.AttrTypes)
	default:
		m.StatusObject = types.ObjectValueMust(releaseStatusType.AttrTypes, fields)
	}
}

// unpackStatus sets the model's fields from `status`.
func (m *helmReleaseModel) unpackStatus() {
	o := m.StatusObject
	str := func(name string) types.String {
		switch {
		case o.IsUnknown():
			return types.StringUnknown()
		case o.IsNull():
			return types.StringNull()
		}
		v, _ := o.Attributes()[name].(types.String)
		return v
	}
	m.Status, m.FirstDeployed, m.LastDeployed = str("release_status"), str("first_deployed"), str("last_deployed")
	m.ApplyMethod = str("apply_method")
}

// modelGetter and modelSetter are the framework's config, plan and state.
type (
	modelGetter interface {
		Get(ctx context.Context, target any) diag.Diagnostics
	}
	modelSetter interface {
		Set(ctx context.Context, val any) diag.Diagnostics
	}
)

// getModel reads a release's model from g, with the fields behind `status`.
func getModel(ctx context.Context, g modelGetter, m *helmReleaseModel) diag.Diagnostics {
	diags := g.Get(ctx, m)
	m.unpackStatus()
	return diags
}

// setModel writes m to s, `status` from its fields.
func setModel(ctx context.Context, s modelSetter, m *helmReleaseModel) diag.Diagnostics {
	m.packStatus()
	// Write-only: never in a plan or a state.
	m.ValuesWO = types.DynamicNull()
	return s.Set(ctx, m)
}

// UpgradeState upgrades the states of earlier schema versions, so that an
// existing release plans nothing after the provider upgrade:
//   - version 0 had the status attributes at the top level; version 1 moved
//     them into the `status` object;
//   - version 2 keeps in `status` only the Helm status and the dates: the
//     history, conditions, failure counters and last attempted action move to
//     private state, which a state upgrade cannot write, so the next read
//     rebuilds them from Helm storage as an import does (loadBook). The
//     failure counters start over.
func (r *helmReleaseResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: {StateUpgrader: upgradeHelmReleaseState(upgradeStatusV0, upgradeStatusV1)},
		1: {StateUpgrader: upgradeHelmReleaseState(upgradeStatusV1)},
	}
}

// upgradeHelmReleaseState is the state upgrader that applies steps, in
// order, to the raw JSON state.
func upgradeHelmReleaseState(steps ...func(map[string]json.RawMessage) error) func(context.Context, resource.UpgradeStateRequest, *resource.UpgradeStateResponse) {
	return func(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
		var state map[string]json.RawMessage
		if err := json.Unmarshal(req.RawState.JSON, &state); err != nil {
			addError(&resp.Diagnostics, "Cannot upgrade the helmrelease state", err)
			return
		}
		for _, step := range steps {
			if err := step(state); err != nil {
				addError(&resp.Diagnostics, "Cannot upgrade the helmrelease state", err)
				return
			}
		}
		b, err := json.Marshal(state)
		if err != nil {
			addError(&resp.Diagnostics, "Cannot upgrade the helmrelease state", err)
			return
		}
		resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
	}
}

// statusAttributesV0 are the version 0 top-level attributes that `status`
// holds from version 1, by their name there.
var statusAttributesV0 = map[string]string{
	"status":                        "release_status",
	"first_deployed":                "first_deployed",
	"last_deployed":                 "last_deployed",
	"history":                       "history",
	"conditions":                    "conditions",
	"failures":                      "failures",
	"install_failures":              "install_failures",
	"upgrade_failures":              "upgrade_failures",
	"last_attempted_release_action": "last_attempted_release_action",
}

// upgradeStatusV0 moves version 0's top-level status attributes into the
// version 1 `status` object.
func upgradeStatusV0(state map[string]json.RawMessage) error {
	status := map[string]json.RawMessage{}
	present := false
	for old, name := range statusAttributesV0 {
		v, ok := state[old]
		delete(state, old)
		if !ok {
			v = json.RawMessage("null")
		}
		present = present || string(v) != "null"
		status[name] = v
	}
	state["status"] = json.RawMessage("null")
	if present {
		b, err := json.Marshal(status)
		if err != nil {
			return err
		}
		state["status"] = b
	}
	return nil
}

// upgradeStatusV1 keeps, of version 1's `status` object, what version 2's
// holds.
func upgradeStatusV1(state map[string]json.RawMessage) error {
	raw, ok := state["status"]
	if !ok || string(raw) == "null" {
		state["status"] = json.RawMessage("null")
		return nil
	}
	var status map[string]json.RawMessage
	if err := json.Unmarshal(raw, &status); err != nil {
		return err
	}
	for name := range status {
		if _, keep := releaseStatusType.AttrTypes[name]; !keep {
			delete(status, name)
		}
	}
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	state["status"] = b
	return nil
}
