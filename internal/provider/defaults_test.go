package provider

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
)

// The provider passes what the user wrote, and the engines fill in their
// defaults (release.Spec.withDefaults): an unset max_history or timeout
// reaches the engine unset, and 0 max history (keep all) as 0.
func TestHelmReleaseSpec_passesWhatTheUserWrote(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxHistory types.Int64
		timeout    types.String
		wantMax    *int
		wantTime   time.Duration
	}{
		{name: "unset", maxHistory: types.Int64Null(), timeout: types.StringNull()},
		{name: "keep all", maxHistory: types.Int64Value(0), timeout: types.StringValue("90s"), wantMax: new(int), wantTime: 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &helmReleaseModel{Name: types.StringValue("podinfo"), Namespace: types.StringValue("apps"),
				MaxHistory: tc.maxHistory, Timeout: tc.timeout, Values: types.DynamicNull()}
			spec, known, diags := helmReleaseSpec(context.Background(), m)
			if diags.HasError() || !known {
				t.Fatalf("helmReleaseSpec: known %v, %v", known, diags)
			}
			if (spec.MaxHistory == nil) != (tc.wantMax == nil) || (spec.MaxHistory != nil && *spec.MaxHistory != *tc.wantMax) {
				t.Errorf("max history %v, want %v", spec.MaxHistory, tc.wantMax)
			}
			if spec.Timeout != tc.wantTime {
				t.Errorf("timeout %s, want %s", spec.Timeout, tc.wantTime)
			}
		})
	}
}

// The schema shows an engine's default duration as a user writes it.
func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{
		resourceset.DefaultTimeout: "5m",
		90 * time.Second:           "1m30s",
		2 * time.Hour:              "2h",
		30 * time.Second:           "30s",
	} {
		if got := durationText(d); got != want {
			t.Errorf("durationText(%s) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(durationText(d)); err != nil || back != d {
			t.Errorf("durationText(%s) parses back as %s, %v", d, back, err)
		}
	}
}
