package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// The strategy, take_ownership and health check blocks become the spec's
// fields; unknown values are recorded by name.
func TestSpecBuilder_fluxFields(t *testing.T) {
	b := newSpecBuilder()
	in := b.under("install").install(&installModel{
		Strategy:      &actionStrategyModel{Name: types.StringValue(release.ActionRetryOnFailure), RetryInterval: types.StringValue("2m")},
		TakeOwnership: types.BoolValue(true),
	})
	up := b.under("upgrade").upgrade(&upgradeModel{Strategy: &actionStrategyModel{Name: types.StringNull(), RetryInterval: types.StringNull()}, TakeOwnership: types.BoolNull()})
	hc := b.healthCheckExprs([]healthCheckExprModel{{
		APIVersion: types.StringValue("bitnami.com/v1alpha1"), Kind: types.StringValue("SealedSecret"),
		Current: types.StringValue("true"), InProgress: types.StringNull(), Failed: types.StringUnknown(),
	}})
	if in.Strategy != (release.ActionStrategy{Name: release.ActionRetryOnFailure, RetryInterval: 2 * time.Minute}) || !in.TakeOwnership {
		t.Errorf("install = %+v", in)
	}
	if up.Strategy != (release.ActionStrategy{}) || up.TakeOwnership {
		t.Errorf("upgrade = %+v", up)
	}
	if len(hc) != 1 || hc[0].APIVersion != "bitnami.com/v1alpha1" || hc[0].Kind != "SealedSecret" || hc[0].Current != "true" {
		t.Errorf("health checks = %+v", hc)
	}
	if b.known() || !strings.Contains(strings.Join(b.unknown, ","), "health_check_exprs[0].failed") {
		t.Errorf("unknown %v, want health_check_exprs[0].failed", b.unknown)
	}
}

// The plan lists every object take_ownership takes, with its managers.
func TestTakeoverWarning(t *testing.T) {
	if d := takeoverWarning("apps/web", nil); d.HasError() || len(d) != 0 {
		t.Errorf("no preview: %v", d)
	}
	if d := takeoverWarning("apps/web", &release.Preview{}); len(d) != 0 {
		t.Errorf("nothing taken: %v", d)
	}
	d := takeoverWarning("apps/web", &release.Preview{Taken: []release.Takeover{
		{Object: "ConfigMap/apps/a", Managers: []string{"kubectl-client-side-apply (Update)", "kubectl (Apply)"}},
		{Object: "Service/apps/b"},
	}})
	if len(d) != 1 || d[0].Summary() != "Objects will be taken" {
		t.Fatalf("diagnostics %v", d)
	}
	want := "helmrelease apps/web: take_ownership: apply takes 2 object(s) that exist and belong to no release:\n" +
		"  - ConfigMap/apps/a (field managers: kubectl-client-side-apply (Update), kubectl (Apply))\n" +
		"  - Service/apps/b (no field managers)"
	if got := d[0].Detail(); got != want {
		t.Errorf("detail\n%s\nwant\n%s", got, want)
	}
}
