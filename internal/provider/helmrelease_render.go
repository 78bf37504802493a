package provider

// What the fields of helm-controller 1.4-1.6 that change how a release is
// rendered and replaced need beyond the spec: their checks at validation
// (common_metadata, values_from[].literal) and the plan of a chart name
// change (upgrade.chart_name_change_strategy).

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// planChartNameChange plans what a new chart name does to the release, as
// upgrade.chart_name_change_strategy says (release.DecideChartNameChange):
// a replacement (Reinstall, the default) or an upgrade in place
// (InPlaceUpdate), and says which in a warning. from is the state's chart
// name, to the planned chart's; nothing happens when either is unknown.
func planChartNameChange(spec *release.Spec, from, to, id string, resp *resource.ModifyPlanResponse) {
	c := release.DecideChartNameChange(spec.Upgrade.ChartNameChangeStrategy, from, to)
	switch c {
	case release.ChartNameUnchanged:
		return
	case release.ChartNameReinstalls:
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root("chart"))
	}
	resp.Diagnostics.AddAttributeWarning(path.Root("upgrade").AtName("chart_name_change_strategy"), "Chart name changes",
		about(release.Kind, id, "%s", c.Sentence(from, to)))
}

// validateRenderFields checks, without a cluster, common_metadata's keys and
// values, and warns of a values_from entry whose literal has no target_path
// to act on (helm-controller ignores it there too).
func validateRenderFields(diags *diag.Diagnostics, m *helmReleaseModel, spec *release.Spec) {
	addError(diags, "Invalid common_metadata", release.ValidateCommonMetadata(spec.CommonMetadata))
	for i, r := range m.ValuesFrom {
		if r.Literal.ValueBool() && r.TargetPath.IsNull() {
			diags.AddAttributeWarning(path.Root("values_from").AtListIndex(i).AtName("literal"), "literal has no effect",
				"literal = true sets a value verbatim at target_path; without target_path the whole document is merged as YAML, "+
					"as helm-controller does: remove literal, or set target_path")
		}
	}
}
