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

// withDefaults names cosign as the provider of a verification that names
// none, without changing the caller's Verify, and keeps a provider that is
// named (Validate refuses any other than cosign).
func TestSpecWithDefaultsVerifyProvider(t *testing.T) {
	in := Spec{Verify: &Verify{}}
	if got := in.withDefaults(); got.Verify.Provider != VerifyProviderCosign {
		t.Errorf("withDefaults: verify provider %q, want %q", got.Verify.Provider, VerifyProviderCosign)
	}
	if in.Verify.Provider != "" {
		t.Errorf("withDefaults changed the caller's Verify: provider %q", in.Verify.Provider)
	}
	named := Spec{Verify: &Verify{Provider: "notation"}}
	if got := named.withDefaults(); got.Verify.Provider != "notation" {
		t.Errorf("withDefaults: verify provider %q, want the one named", got.Verify.Provider)
	}
	if got := (Spec{}).withDefaults(); got.Verify != nil {
		t.Errorf("withDefaults: a spec without verify got %+v", got.Verify)
	}
}
