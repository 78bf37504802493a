package provider

import (
	"context"
	"os"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestHelmReleaseUpgradeState_fromV0MovesStatusAttributes: a release's state
// written by tofu with the version 0 schema (status attributes at the top
// level) upgrades with them in `status`, values unchanged, and nothing else
// moved.
func TestHelmReleaseUpgradeState_fromV0MovesStatusAttributes(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile("testdata/helmrelease_state.json")
	if err != nil {
		t.Fatal(err)
	}
	server := NewServer("test")()
	schemas, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	schema := schemas.ResourceSchemas["stevedore_helmrelease"]
	if schema.Version != 1 {
		t.Fatalf("schema version %d, want 1", schema.Version)
	}
	up, err := server.UpgradeResourceState(ctx, &tfprotov6.UpgradeResourceStateRequest{
		TypeName: "stevedore_helmrelease", Version: 0, RawState: &tfprotov6.RawState{JSON: raw},
	})
	if err != nil || len(up.Diagnostics) > 0 {
		t.Fatalf("upgrade: %v %v", err, up.Diagnostics)
	}
	v, err := up.UpgradedState.Unmarshal(schema.ValueType())
	if err != nil {
		t.Fatal(err)
	}
	var attrs, status map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		t.Fatal(err)
	}
	if err := attrs["status"].As(&status); err != nil || status == nil {
		t.Fatalf("status %v: %v", attrs["status"], err)
	}
	str := func(v tftypes.Value) string {
		var s string
		if err := v.As(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var history, conditions []tftypes.Value
	if err := status["history"].As(&history); err != nil || len(history) != 1 {
		t.Fatalf("status.history %v: %v", status["history"], err)
	}
	if err := status["conditions"].As(&conditions); err != nil || len(conditions) != 2 {
		t.Fatalf("status.conditions %v: %v", status["conditions"], err)
	}
	for name, want := range map[string]string{
		"release_status": "deployed", "first_deployed": "2026-11-23T13:44:55Z", "last_attempted_release_action": "install",
	} {
		if got := str(status[name]); got != want {
			t.Errorf("status.%s = %q, want %q", name, got, want)
		}
	}
	if got := str(attrs["chart_version"]); got != "1.0.0" {
		t.Errorf("chart_version = %q, want 1.0.0: attributes outside status must stay", got)
	}
}
