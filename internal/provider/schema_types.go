package provider

import (
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// The types and values that more than one resource's schema shares: drift
// and changes (stevedore_helmrelease, stevedore_resourceset), conditions,
// and the names Kubernetes takes.

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

var (
	driftChangeType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"op": types.StringType, "path": types.StringType, "from": types.StringType, "to": types.StringType,
	}}
	driftEntryType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"id": types.StringType, "type": types.StringType, "changes": types.ListType{ElemType: driftChangeType},
	}}
	conditionType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"type": types.StringType, "status": types.StringType, "reason": types.StringType, "message": types.StringType,
	}}
)

// driftValue is drift as the `drift` and `changes` attributes.
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

func emptyDrift() types.List { return types.ListValueMust(driftEntryType, nil) }
