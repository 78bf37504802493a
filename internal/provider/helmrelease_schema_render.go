package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// The attributes of a release that say how its chart is rendered and
// replaced, from helm-controller 1.4-1.6: disable_schema_validation,
// chart_name_change_strategy, common_metadata, and the precedence of
// values_from's target_path (literal).

// valuesPrecedence says how `values` and `values_from` layer, in every
// description that mentions it: composeValues (internal/engine/release/
// values.go) decides it, with helm-controller's own merge.
const valuesPrecedence = "`values_from` entries are merged in order, then `values` (with `set`, `set_list` and " +
	"`set_sensitive` set into it) on top: `values` wins. One exception, which helm-controller has too (both merge with " +
	"fluxcd/pkg/chartutil): a `target_path` inside a map that `values` has and no earlier `values_from` entry has " +
	"(e.g. `image.tag` where only `values` sets `image`) is written into `values` itself, so there the `target_path` " +
	"value wins, over `values` and over later `values_from` entries."

// targetPathPrecedence is valuesPrecedence seen from a target_path.
const targetPathPrecedence = "`values` wins over it, except where its parent map comes from `values` alone (no earlier " +
	"`values_from` entry has that map): there it is written into `values` and wins, as in helm-controller."

// disableSchemaValidation is install.disable_schema_validation and
// upgrade.disable_schema_validation.
func disableSchemaValidation(action string) schema.BoolAttribute {
	return schema.BoolAttribute{Optional: true,
		MarkdownDescription: "Do not validate the values against the chart's `values.schema.json` (and its subcharts'), as " +
			"helm-controller's `" + action + ".disableSchemaValidation` and `helm " + action + " --skip-schema-validation`. The " +
			"plan's preview of the " + action + " skips the schema too, so values the schema refuses plan and apply. Default false."}
}

// chartNameChangeStrategyAttribute is upgrade.chart_name_change_strategy.
func chartNameChangeStrategyAttribute() schema.StringAttribute {
	return schema.StringAttribute{Optional: true,
		Validators: []validator.String{stringvalidator.OneOf(release.ChartNameChangeStrategies...)},
		MarkdownDescription: "What a new chart name (Chart.yaml's `name`) does to the release, as helm-controller 1.6's " +
			"`upgrade.chartNameChangeStrategy`: `Reinstall` (default) uninstalls the release and installs it with the new " +
			"chart, which the plan shows as a replacement; `InPlaceUpdate` upgrades the release in place (a new revision, " +
			"objects updated and history kept), which the plan shows as an update with its `changes`; the new chart must then " +
			"keep the immutable fields of the objects (a Deployment's selector, which charts often label with their name), " +
			"else the plan fails as the upgrade would. Either way the plan warns, naming both charts and what will happen. When the plan cannot know the new chart (its archive is made " +
			"in the same apply) and the name turns out to have changed, `Reinstall` fails that apply before anything is " +
			"done, and the next plan shows the replacement."}
}

// releaseCommonMetadataBlock is common_metadata of a release.
func releaseCommonMetadataBlock() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Labels and annotations set on every object the release renders, as helm-controller's " +
			"`commonMetadata`: after the `post_renderers` (they win over the chart and the patches), on `metadata` only (not on " +
			"selectors or pod templates), on hooks too unless `post_render_strategy` is `nohooks`; not on the CRDs of the " +
			"chart's crds/, which are not post-rendered. A change upgrades the release (it is part of " +
			"`post_renderers_digest`), and the plan's `changes` show it per object; removing a key removes it from the objects. " +
			"Keys that record ownership are refused at validation: any `stevedore.dev/` key (the origin labels win in " +
			"helm-controller; here they are not overridable) and Helm's `app.kubernetes.io/managed-by` label and " +
			"`meta.helm.sh/release-name` and `meta.helm.sh/release-namespace` annotations (Helm writes them itself).",
		Attributes: map[string]schema.Attribute{
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				Description: "Labels set on every object, over the chart's."},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				Description: "Annotations set on every object, over the chart's."},
		},
	}
}
