package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// releaseStatusType is the type of the `status` attribute: what Flux keeps in
// a HelmRelease's status and a user rarely references, grouped so that a plan
// for an upgrade shows one `status = (known after apply)`.
var releaseStatusType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"release_status":                types.StringType,
	"first_deployed":                types.StringType,
	"last_deployed":                 types.StringType,
	"history":                       types.ListType{ElemType: snapshotType},
	"conditions":                    types.ListType{ElemType: conditionType},
	"failures":                      types.Int64Type,
	"install_failures":              types.Int64Type,
	"upgrade_failures":              types.Int64Type,
	"last_attempted_release_action": types.StringType,
}}

// statusFields are the model's fields behind `status`, by attribute name.
func (m *helmReleaseModel) statusFields() map[string]attr.Value {
	return map[string]attr.Value{
		"release_status":                m.Status,
		"first_deployed":                m.FirstDeployed,
		"last_deployed":                 m.LastDeployed,
		"history":                       m.History,
		"conditions":                    m.Conditions,
		"failures":                      m.Failures,
		"install_failures":              m.InstallFailures,
		"upgrade_failures":              m.UpgradeFailures,
		"last_attempted_release_action": m.LastAttemptedAction,
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
			fields[name] = nullOf(releaseStatusType.AttrTypes[name])
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
	num := func(name string) types.Int64 {
		switch {
		case o.IsUnknown():
			return types.Int64Unknown()
		case o.IsNull():
			return types.Int64Null()
		}
		v, _ := o.Attributes()[name].(types.Int64)
		return v
	}
	list := func(name string, elem attr.Type) types.List {
		switch {
		case o.IsUnknown():
			return types.ListUnknown(elem)
		case o.IsNull():
			return types.ListNull(elem)
		}
		v, _ := o.Attributes()[name].(types.List)
		return v
	}
	m.Status, m.FirstDeployed, m.LastDeployed = str("release_status"), str("first_deployed"), str("last_deployed")
	m.History, m.Conditions = list("history", snapshotType), list("conditions", conditionType)
	m.Failures, m.InstallFailures, m.UpgradeFailures = num("failures"), num("install_failures"), num("upgrade_failures")
	m.LastAttemptedAction = str("last_attempted_release_action")
}

func nullOf(t attr.Type) attr.Value {
	switch t := t.(type) {
	case types.ListType:
		return types.ListNull(t.ElemType)
	case basetypes.Int64Type:
		return types.Int64Null()
	}
	return types.StringNull()
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

// UpgradeState moves the status attributes of a version 0 state (top-level
// `status`, `first_deployed`, `last_deployed`, `history`, `conditions`,
// `failures`, `install_failures`, `upgrade_failures`,
// `last_attempted_release_action`) into the `status` object, so that an
// existing release plans nothing after the provider upgrade.
func (r *helmReleaseResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{0: {StateUpgrader: upgradeHelmReleaseStateV0}}
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

func upgradeHelmReleaseStateV0(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	var state map[string]json.RawMessage
	if err := json.Unmarshal(req.RawState.JSON, &state); err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the helmrelease state", err.Error())
		return
	}
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
			resp.Diagnostics.AddError("Cannot upgrade the helmrelease state", err.Error())
			return
		}
		state["status"] = b
	}
	b, err := json.Marshal(state)
	if err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the helmrelease state", err.Error())
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
}
