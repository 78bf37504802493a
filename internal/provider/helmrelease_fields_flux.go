package provider

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// helm-controller 1.4-1.6's release fields of this file: install.strategy and
// upgrade.strategy, install.take_ownership and upgrade.take_ownership, and
// health_check_exprs; their schema, models, spec building and the plan's
// account of the objects take_ownership takes.

// actionStrategyModel is install.strategy or upgrade.strategy.
type actionStrategyModel struct {
	Name          types.String `tfsdk:"name"`
	RetryInterval types.String `tfsdk:"retry_interval"`
}

// healthCheckExprModel is a health_check_exprs entry.
type healthCheckExprModel struct {
	APIVersion types.String `tfsdk:"api_version"`
	Kind       types.String `tfsdk:"kind"`
	Current    types.String `tfsdk:"current"`
	InProgress types.String `tfsdk:"in_progress"`
	Failed     types.String `tfsdk:"failed"`
}

// actionStrategyBlock is the strategy block of action (install or upgrade).
func actionStrategyBlock(action string) schema.SingleNestedBlock {
	retry := "retries a failed install with an upgrade"
	if action == "upgrade" {
		retry = "retries a failed upgrade with an upgrade"
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: fmt.Sprintf("helm-controller's `%s.strategy` (1.4+): what follows a failed %s. `RemediateOnFailure` "+
			"(the default) applies `%s.remediation`; `RetryOnFailure` runs no remediation: helm-controller %s after "+
			"`retryInterval`; here the apply fails at once and leaves the failed release as it is, and the next apply %s. "+
			"Failures still count, and a %s that succeeds under `RetryOnFailure` clears the counters, as helm-controller's.",
			action, action, action, retry, retry, action),
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Optional: true, Validators: []validator.String{stringvalidator.OneOf(release.ActionStrategies...)},
				MarkdownDescription: "`RemediateOnFailure` (default) or `RetryOnFailure`."},
			"retry_interval": schema.StringAttribute{Optional: true, Validators: []validator.String{durationValidator{}},
				MarkdownDescription: "helm-controller's `retryInterval` (a Go duration, default `5m`), allowed only with `RetryOnFailure`: " +
					"how long helm-controller waits before it retries. **It does nothing within an apply**, which never waits to " +
					"retry (the next apply retries, when you run it); it is accepted so that a HelmRelease translates field by field."},
		},
	}
}

// takeOwnershipAttr is install.take_ownership or upgrade.take_ownership.
func takeOwnershipAttr(action string) schema.BoolAttribute {
	which := "An install takes the objects of the chart"
	if action == "upgrade" {
		which = "An upgrade takes the objects it adds to the release"
	}
	return schema.BoolAttribute{Optional: true,
		MarkdownDescription: which + " that exist in the cluster and belong to no release and no other tool (no Helm " +
			"release metadata, no stevedore, Flux or flux-operator labels), instead of failing on them: Helm's " +
			"`--take-ownership`, hashicorp/helm's `take_ownership`. The plan lists each object it will take with its current " +
			"field managers (a warning); under server-side apply their fields are taken from those managers (conflicts forced, " +
			"as helm-controller's install forces them). An object that another Helm release or another stevedore resource (or Flux) owns is " +
			"never taken: the plan fails naming it and its owner. Default false, as hashicorp/helm's; helm-controller takes " +
			"such objects by default (`disableTakeOwnership: false`)."}
}

// healthCheckExprsBlock is health_check_exprs.
func healthCheckExprsBlock() schema.ListNestedBlock {
	expr := func(desc string, required bool) schema.StringAttribute {
		return schema.StringAttribute{Optional: !required, Required: required, MarkdownDescription: desc}
	}
	return schema.ListNestedBlock{
		MarkdownDescription: "helm-controller's `healthCheckExprs` (1.5+): health checks of custom resources in CEL, as Flux's " +
			"cheat sheet writes them. They apply where helm-controller applies them: to the waits of `wait_strategy = \"poller\"` " +
			"(the default) of installs, upgrades and rollbacks whose wait is not disabled, and to the report of the objects not " +
			"ready that a timed-out wait gives. Drift correction waits for no object's health (only for a CustomResourceDefinition " +
			"or Namespace it makes again, as helm-controller's), so no check runs there; the next plan's drift detection compares " +
			"the objects, not their health. An object a check applies to (by the group of `api_version`, and `kind` when set; " +
			"an entry with a `kind` wins over a group-only one) is InProgress while its `status.observedGeneration` (an integer) " +
			"is not its `metadata.generation`; then `in_progress`, `failed` and `current` are evaluated in this order and the " +
			"first that is true says its status; none true is InProgress. The expressions read the object's top-level fields " +
			"(`status`, `spec`, `metadata`); one that reads a field the object does not have fails its evaluation, and the wait " +
			"goes on until its timeout (use `has(...)`). An expression that does not parse is an error at validate, naming " +
			"the entry.",
		NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
			"api_version": schema.StringAttribute{Required: true,
				MarkdownDescription: "API version of the objects, e.g. `bitnami.com/v1alpha1`: only its group is matched, every served version."},
			"kind":        expr("Kind of the objects; unset matches every kind of the group.", false),
			"current":     expr("CEL expression that is true when the object is ready (Current).", true),
			"in_progress": expr("CEL expression that is true while the object is still being reconciled (InProgress).", false),
			"failed":      expr("CEL expression that is true when the object failed (Failed): the wait fails at once.", false),
		}},
	}
}

// actionStrategy reads a strategy block.
func (b *specBuilder) actionStrategy(m *actionStrategyModel) release.ActionStrategy {
	if m == nil {
		return release.ActionStrategy{}
	}
	sb := b.under("strategy")
	return release.ActionStrategy{Name: sb.str("name", m.Name), RetryInterval: sb.duration("retry_interval", m.RetryInterval)}
}

// healthCheckExprs reads health_check_exprs.
func (b *specBuilder) healthCheckExprs(list []healthCheckExprModel) []release.HealthCheckExpr {
	var out []release.HealthCheckExpr
	for i, h := range list {
		e := b.under(fielderr.Index("health_check_exprs", i))
		out = append(out, release.HealthCheckExpr{
			APIVersion: e.str("api_version", h.APIVersion), Kind: e.str("kind", h.Kind),
			Current: e.str("current", h.Current), InProgress: e.str("in_progress", h.InProgress), Failed: e.str("failed", h.Failed),
		})
	}
	return out
}

// takeoverWarning is the plan's account of the objects an install or
// upgrade takes with take_ownership.
func takeoverWarning(id string, pv *release.Preview) diag.Diagnostics {
	var diags diag.Diagnostics
	if pv == nil || len(pv.Taken) == 0 {
		return diags
	}
	lines := make([]string, len(pv.Taken))
	for i, t := range pv.Taken {
		lines[i] = "  - " + t.String()
	}
	diags.AddWarning("Objects will be taken",
		about(release.Kind, id, "take_ownership: apply takes %d object(s) that exist and belong to no release:\n%s",
			len(pv.Taken), strings.Join(lines, "\n")))
	return diags
}
