package provider

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The builder reads known values as they are, and records each unknown one
// by its name, under the names of the blocks it is read in.
func TestSpecBuilderRecordsUnknownByName(t *testing.T) {
	b := newSpecBuilder()
	if got := b.str("name", types.StringValue("app")); got != "app" {
		t.Errorf("str = %q, want app", got)
	}
	if got := b.boolean("wait", types.BoolValue(true)); !got {
		t.Error("boolean = false, want true")
	}
	if !b.known() {
		t.Fatalf("known values recorded unknown: %v", b.unknown)
	}

	if got := b.str("namespace", types.StringUnknown()); got != "" {
		t.Errorf("str of an unknown = %q, want empty", got)
	}
	in := b.under("install")
	in.duration("timeout", types.StringUnknown())
	in.under("remediation").optBool("ignore_test_failures", types.BoolUnknown())
	b.under("values_from[1]").integer("retries", types.Int64Unknown())
	b.strings("take_over_from", types.ListValueMust(types.StringType, []attr.Value{types.StringValue("helm"), types.StringUnknown()}))
	b.strings("api_versions", types.ListUnknown(types.StringType))
	b.stringMap("common_metadata.labels", types.MapValueMust(types.StringType, map[string]attr.Value{"a": types.StringUnknown()}))
	if err := b.unknownIf("steps", errUnknownValue); err != nil {
		t.Errorf("unknownIf(errUnknownValue) = %v, want nil", err)
	}

	want := []string{"namespace", "install.timeout", "install.remediation.ignore_test_failures", "values_from[1].retries",
		"take_over_from", "api_versions", "common_metadata.labels", "steps"}
	if !slices.Equal(b.unknown, want) {
		t.Errorf("unknown = %q, want %q", b.unknown, want)
	}
	known, diags := b.result()
	if known || diags.HasError() {
		t.Errorf("result = %v, %v; want unknown, no error", known, diags)
	}
	if !in.isUnknown("timeout") || !b.isUnknown("install.timeout") || b.isUnknown("timeout") {
		t.Error("isUnknown does not name the attributes under their blocks")
	}
}

// A null value reads as Go's zero value and is not unknown; a null list or
// map is nil; a null element of a list is an error on the element, of a map
// a key not given.
func TestSpecBuilderNulls(t *testing.T) {
	b := newSpecBuilder()
	if b.str("name", types.StringNull()) != "" || b.boolean("wait", types.BoolNull()) || b.integer("retries", types.Int64Null()) != 0 {
		t.Error("a null scalar did not read as its zero value")
	}
	if b.optBool("ignore", types.BoolNull()) != nil {
		t.Error("optBool of null is not nil")
	}
	if b.duration("timeout", types.StringNull()) != 0 {
		t.Error("duration of null is not zero")
	}
	if b.strings("values_files", types.ListNull(types.StringType)) != nil || b.stringMap("labels", types.MapNull(types.StringType)) != nil {
		t.Error("a null list or map is not nil")
	}
	if !b.known() || b.diags.HasError() {
		t.Fatalf("null values: unknown %v, diagnostics %v", b.unknown, b.diags)
	}

	got := b.under("chart").strings("values_files", types.ListValueMust(types.StringType,
		[]attr.Value{types.StringValue("a.yaml"), types.StringNull(), types.StringValue("b.yaml")}))
	if !slices.Equal(got, []string{"a.yaml", "b.yaml"}) {
		t.Errorf("strings = %q, want the non-null elements", got)
	}
	wantDiag := diag.NewAttributeErrorDiagnostic(path.Root("chart").AtName("values_files").AtListIndex(1),
		"Invalid value", "chart.values_files must not hold null")
	if len(b.diags) != 1 || !b.diags[0].Equal(wantDiag) {
		t.Errorf("diagnostics %v, want %v", b.diags, wantDiag)
	}

	m := b.stringMap("labels", types.MapValueMust(types.StringType, map[string]attr.Value{"a": types.StringValue("1"), "b": types.StringNull()}))
	if len(m) != 1 || m["a"] != "1" {
		t.Errorf("stringMap = %v, want only a=1", m)
	}
	if !b.known() {
		t.Errorf("null elements recorded unknown: %v", b.unknown)
	}
}

// A duration that does not parse is an error on its attribute.
func TestSpecBuilderDuration(t *testing.T) {
	b := newSpecBuilder()
	if got := b.under("upgrade").duration("timeout", types.StringValue("90s")); got != 90*time.Second {
		t.Errorf("duration = %v, want 90s", got)
	}
	b.under("upgrade").duration("timeout", types.StringValue("soon"))
	if len(b.diags) != 1 || !b.diags[0].(diag.DiagnosticWithPath).Path().Equal(path.Root("upgrade").AtName("timeout")) ||
		b.diags[0].Summary() != "Invalid duration" {
		t.Errorf("diagnostics %v, want one Invalid duration on upgrade.timeout", b.diags)
	}
}

// Each spec conversion records the names of the unknown values it reads:
// the release's, the set's, the chart source's.
func TestSpecConversionsRecordUnknown(t *testing.T) {
	b := newSpecBuilder()
	b.under("install").install(&installModel{Timeout: types.StringNull(), CRDs: types.StringUnknown(),
		Remediation: &installRemediationModel{Retries: types.Int64Unknown()}})
	b.dependencies([]dependencyModel{{APIVersion: types.StringValue("v1"), Kind: types.StringValue("ConfigMap"),
		Name: types.StringUnknown(), Namespace: types.StringNull(), Ready: types.BoolNull(), ReadyExpr: types.StringNull()}})
	if want := []string{"install.crds", "install.remediation.retries", "dependencies[0].name"}; !slices.Equal(b.unknown, want) {
		t.Errorf("release blocks: unknown = %q, want %q", b.unknown, want)
	}

	src := nullChartSource()
	src.Repository, src.Chart = types.StringValue("oci://example.com/charts"), types.StringValue("app")
	src.Version = types.StringUnknown()
	src.Verify = &verifyModel{Provider: types.StringNull(), PublicKeys: types.ListNull(types.StringType),
		MatchOIDCIdentity: []identityModel{{Issuer: types.StringValue("https://issuer"), Subject: types.StringUnknown()}}}
	cb := newSpecBuilder()
	spec := src.chartSpec(cb.under("chart"), nil)
	if want := []string{"chart.version", "chart.verify.match_oidc_identity[0].subject"}; !slices.Equal(cb.unknown, want) {
		t.Errorf("chart source: unknown = %q, want %q", cb.unknown, want)
	}
	// The verification provider is the chart engine's to default.
	if spec.Verify == nil || spec.Verify.Provider != "" {
		t.Errorf("chart source: verify %+v, want the provider as written (empty)", spec.Verify)
	}

	m := resourceSetModel{Name: types.StringValue("rs"), Namespace: types.StringUnknown(), Inputs: types.DynamicNull(),
		Resources: types.DynamicUnknown(), Steps: types.DynamicNull(), ResourcesTemplate: types.StringNull(),
		Wait: types.BoolValue(true), Timeout: types.StringValue("1m"), ServiceAccountName: types.StringNull(),
		Force: types.BoolNull(), TakeOverFrom: types.ListNull(types.StringType),
		InputsFrom: types.ListNull(types.ObjectType{}), InputStrategy: types.ObjectNull(nil)}
	spec2, known, diags := specFrom(context.Background(), &m)
	if known || diags.HasError() || spec2.Name != "rs" || spec2.Timeout != time.Minute || !spec2.Wait {
		t.Errorf("resource set: spec %+v, known %v, diagnostics %v", spec2, known, diags)
	}
}
