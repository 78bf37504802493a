package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// TestPlanChartNameChange: a new chart name replaces the release under
// Reinstall (the default) and not under InPlaceUpdate; both warn on the
// strategy's attribute, saying which; no change, or a name not known, plans
// nothing and says nothing.
func TestPlanChartNameChange(t *testing.T) {
	for _, tc := range []struct {
		strategy, from, to string
		replace            bool
		warning            string
	}{
		{"", "podinfo", "podinfo", false, ""},
		{"", "", "webapp", false, ""},
		{"", "podinfo", "webapp", true, "uninstalled and installed again"},
		{release.ChartNameReinstall, "podinfo", "webapp", true, "uninstalled and installed again"},
		{release.ChartNameInPlaceUpdate, "podinfo", "webapp", false, "upgraded in place"},
	} {
		spec := &release.Spec{Upgrade: release.Upgrade{ChartNameChangeStrategy: tc.strategy}}
		resp := &resource.ModifyPlanResponse{}
		planChartNameChange(spec, tc.from, tc.to, "apps/podinfo", resp)
		if replaced := len(resp.RequiresReplace) == 1 && resp.RequiresReplace[0].Equal(path.Root("chart")); replaced != tc.replace || len(resp.RequiresReplace) > 1 {
			t.Errorf("%q %s -> %s: requires replace %v, want chart: %v", tc.strategy, tc.from, tc.to, resp.RequiresReplace, tc.replace)
		}
		warnings := resp.Diagnostics.Warnings()
		switch {
		case tc.warning == "" && len(warnings) > 0:
			t.Errorf("%q %s -> %s: warnings %v", tc.strategy, tc.from, tc.to, warnings)
		case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0].Detail(), tc.warning) ||
			!strings.HasPrefix(warnings[0].Detail(), "helmrelease apps/podinfo: ")):
			t.Errorf("%q %s -> %s: warnings %v, want one saying %q", tc.strategy, tc.from, tc.to, warnings, tc.warning)
		}
	}
}
