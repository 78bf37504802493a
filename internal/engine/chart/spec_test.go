package chart

import "testing"

// withDefaults fills in the version constraint and the reconcile strategy a
// spec leaves unset, and keeps those it sets.
func TestSpecWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want Spec
	}{
		{in: Spec{Chart: "podinfo"}, want: Spec{Chart: "podinfo", Version: DefaultVersion, ReconcileStrategy: StrategyChartVersion}},
		{in: Spec{Version: "~6.5.0", ReconcileStrategy: StrategyRevision}, want: Spec{Version: "~6.5.0", ReconcileStrategy: StrategyRevision}},
	} {
		got := tc.in.withDefaults()
		if got.Version != tc.want.Version || got.ReconcileStrategy != tc.want.ReconcileStrategy || got.Chart != tc.want.Chart {
			t.Errorf("withDefaults(%+v) = version %q, strategy %q, chart %q; want %q, %q, %q", tc.in,
				got.Version, got.ReconcileStrategy, got.Chart, tc.want.Version, tc.want.ReconcileStrategy, tc.want.Chart)
		}
	}
}
