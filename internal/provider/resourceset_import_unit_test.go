package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestKeepNullDefaults: wait, timeout and force stay null in the plan when
// the state (an import) has them null and the configuration sets none; a
// value in the configuration or in the state plans as the schema does.
func TestKeepNullDefaults(t *testing.T) {
	defaults := resourceSetModel{Wait: types.BoolValue(false), Timeout: types.StringValue("5m"), Force: types.BoolValue(false)}
	nulls := resourceSetModel{Wait: types.BoolNull(), Timeout: types.StringNull(), Force: types.BoolNull()}
	set := resourceSetModel{Wait: types.BoolValue(true), Timeout: types.StringValue("1m"), Force: types.BoolValue(true)}
	for _, tc := range []struct {
		name             string
		state, cfg, plan resourceSetModel
		want             resourceSetModel
	}{
		{"imported, configuration sets none", nulls, nulls, defaults, nulls},
		{"imported, configuration sets them", nulls, set, set, set},
		{"applied before, configuration sets none", defaults, nulls, defaults, defaults},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := tc.plan
			keepNullDefaults(&plan, &tc.state, &tc.cfg)
			if !plan.Wait.Equal(tc.want.Wait) || !plan.Timeout.Equal(tc.want.Timeout) || !plan.Force.Equal(tc.want.Force) {
				t.Errorf("plan wait %v timeout %v force %v, want %v %v %v", plan.Wait, plan.Timeout, plan.Force, tc.want.Wait, tc.want.Timeout, tc.want.Force)
			}
		})
	}
}
