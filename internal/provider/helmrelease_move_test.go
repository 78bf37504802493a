package provider

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/release"
)

// helm_release state of hashicorp/helm 2.x (schema version 1, SDKv2: set
// blocks with type "", metadata a list), with an attribute no version has.
const helmReleaseStateV1 = `{
  "id": "web", "name": "web", "namespace": "apps", "chart": "podinfo", "repository": "https://charts.example.com/",
  "version": "6.5.4", "description": null, "timeout": 600, "atomic": true, "wait": false, "wait_for_jobs": false,
  "max_history": 3, "create_namespace": true, "disable_webhooks": true, "skip_crds": true, "reset_values": false,
  "reuse_values": true, "cleanup_on_fail": true, "force_update": false, "replace": false, "devel": null, "lint": false,
  "disable_crd_hooks": false, "disable_openapi_validation": false, "render_subchart_notes": true, "recreate_pods": false,
  "dependency_update": false, "keyring": null, "verify": false, "pass_credentials": false,
  "repository_username": "u", "repository_password": "p", "repository_ca_file": null,
  "values": ["replicaCount: 2\nimage:\n  tag: a\n", "image:\n  pullPolicy: Always\n"],
  "set": [{"name": "image.tag", "value": "1.2", "type": ""}, {"name": "n", "value": "2", "type": "string"}],
  "set_list": [{"name": "hosts", "value": ["a", "b"]}],
  "set_sensitive": [{"name": "password", "value": "s3cr3t", "type": ""}],
  "metadata": [{"name": "web", "namespace": "apps", "revision": 1, "chart": "podinfo", "version": "6.5.4",
                "app_version": "6.5.4", "values": "{}"}],
  "manifest": null, "postrender": [], "status": "deployed",
  "an_attribute_from_the_future": {"x": 1}
}`

// helm_release state of hashicorp/helm 3.x (schema version 2, the plugin
// framework: metadata an object, set_wo null), defaults everywhere, with an
// attribute no version has.
const helmReleaseStateV2 = `{
  "id": "web", "name": "web", "namespace": "default", "chart": "oci://registry.example.com/charts/podinfo", "repository": null,
  "version": "6.5.4", "description": null, "timeout": 300, "atomic": false, "wait": true, "wait_for_jobs": false,
  "max_history": 0, "create_namespace": false, "disable_webhooks": false, "skip_crds": false, "reset_values": false,
  "reuse_values": false, "cleanup_on_fail": false, "force_update": false, "replace": false, "take_ownership": false,
  "upgrade_install": false, "values": null, "set": null, "set_list": null, "set_sensitive": null,
  "set_wo": null, "set_wo_revision": null, "resources": null, "timeouts": null,
  "metadata": {"name": "web", "namespace": "default", "revision": 4, "chart": "podinfo", "version": "6.5.4",
               "app_version": "6.5.4", "values": "{}", "first_deployed": 1, "last_deployed": 2, "notes": ""},
  "status": "deployed", "yet_another_new_attribute": [1, 2]
}`

func moveHelmRelease(t *testing.T, addr string, version int64, raw string) (*helmReleaseModel, resource.MoveStateResponse) {
	t.Helper()
	ctx := context.Background()
	s := helmReleaseSchema()
	resp := resource.MoveStateResponse{TargetState: tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}}
	moveFromHelmRelease(ctx, resource.MoveStateRequest{
		SourceProviderAddress: addr, SourceTypeName: "helm_release", SourceSchemaVersion: version,
		SourceRawState: &tfprotov6.RawState{JSON: []byte(raw)},
	}, &resp)
	if resp.Diagnostics.HasError() || resp.TargetState.Raw.IsNull() {
		return nil, resp
	}
	var m helmReleaseModel
	if d := getModel(ctx, resp.TargetState, &m); d.HasError() {
		t.Fatalf("moved state does not read back: %v", d)
	}
	return &m, resp
}

func TestMoveHelmReleaseAddresses(t *testing.T) {
	for _, addr := range []string{"helm", "hashicorp/helm", "registry.terraform.io/hashicorp/helm", "registry.opentofu.org/hashicorp/helm",
		"Registry.Terraform.io/HashiCorp/helm"} {
		if m, resp := moveHelmRelease(t, addr, 2, helmReleaseStateV2); m == nil {
			t.Errorf("%s: not moved: %v", addr, resp.Diagnostics)
		}
	}
	for _, addr := range []string{"example.com/hashicorp/helm", "someone/helm", "hashicorp/kubernetes", "registry.terraform.io/hashicorp/helm2", ""} {
		if m, resp := moveHelmRelease(t, addr, 2, helmReleaseStateV2); m != nil || resp.Diagnostics.HasError() {
			t.Errorf("%s: moved (%v) or failed (%v); want skipped", addr, m != nil, resp.Diagnostics)
		}
	}
	// Another type of the helm provider is not a release.
	ctx := context.Background()
	s := helmReleaseSchema()
	resp := resource.MoveStateResponse{TargetState: tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(ctx), nil)}}
	moveFromHelmRelease(ctx, resource.MoveStateRequest{SourceProviderAddress: "hashicorp/helm", SourceTypeName: "helm_template",
		SourceSchemaVersion: 2, SourceRawState: &tfprotov6.RawState{JSON: []byte(helmReleaseStateV2)}}, &resp)
	if !resp.TargetState.Raw.IsNull() || resp.Diagnostics.HasError() {
		t.Errorf("helm_template: moved or failed: %v", resp.Diagnostics)
	}
}

func TestMoveHelmReleaseV1(t *testing.T) {
	m, resp := moveHelmRelease(t, "registry.terraform.io/hashicorp/helm", 1, helmReleaseStateV1)
	if m == nil {
		t.Fatalf("not moved: %v", resp.Diagnostics)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("id", m.ID.ValueString(), "apps/web")
	check("name", m.Name.ValueString(), "web")
	check("namespace", m.Namespace.ValueString(), "apps")
	check("release_name", m.ReleaseName.ValueString(), "web")
	check("storage_namespace", m.StorageNamespace.ValueString(), "apps")
	check("chart.repository", m.Chart.Repository.ValueString(), "https://charts.example.com")
	check("chart.chart", m.Chart.Chart.ValueString(), "podinfo")
	check("chart.version", m.Chart.Version.ValueString(), "6.5.4")
	check("chart.username", m.Chart.Username.ValueString(), "u")
	check("chart.password", m.Chart.Password.ValueString(), "p")
	check("timeout", m.Timeout.ValueString(), "600s")
	check("max_history", m.MaxHistory.ValueInt64(), int64(3))
	check("install.create_namespace", m.Install.CreateNamespace.ValueBool(), true)
	check("install.crds", m.Install.CRDs.ValueString(), "Skip")
	check("install.disable_hooks", m.Install.DisableHooks.ValueBool(), true)
	check("install.disable_wait", m.Install.DisableWait.ValueBool(), true)
	check("install.remediation.remediate_last_failure", m.Install.Remediation.RemediateLastFailure.ValueBool(), true)
	check("upgrade.preserve_values", m.Upgrade.PreserveValues.ValueBool(), true)
	check("upgrade.cleanup_on_fail", m.Upgrade.CleanupOnFail.ValueBool(), true)
	check("upgrade.force", m.Upgrade.Force.IsNull(), true)
	check("upgrade.remediation.remediate_last_failure", m.Upgrade.Remediation.RemediateLastFailure.ValueBool(), true)
	check("uninstall.disable_hooks", m.Uninstall.DisableHooks.ValueBool(), true)
	check("version (computed, left to refresh)", m.Version.IsNull(), true)
	check("status (computed, left to refresh)", m.StatusObject.IsNull(), true)

	// The values and sets compose as helm_release composed them.
	spec, known, diags := helmReleaseSpec(context.Background(), m)
	if diags.HasError() || !known {
		t.Fatalf("spec: known %v, %v", known, diags)
	}
	want := map[string]any{"replicaCount": float64(2), "image": map[string]any{"tag": "1.2", "pullPolicy": "Always"},
		"n": "2", "hosts": []any{"a", "b"}, "password": "s3cr3t"}
	composed, err := release.InlineValues(spec.Values, spec.Sets)
	if err != nil {
		t.Fatal(err)
	}
	check("composed values", normalizeForTest(t, composed), want)
	// The type "" of 2.x is no type.
	var sets []setEntryModel
	m.Set.ElementsAs(context.Background(), &sets, false)
	check("set[0].type", sets[0].Type.IsNull(), true)
	check("set[1].type", sets[1].Type.ValueString(), "string")
}

func TestMoveHelmReleaseV2(t *testing.T) {
	m, resp := moveHelmRelease(t, "registry.opentofu.org/hashicorp/helm", 2, helmReleaseStateV2)
	if m == nil {
		t.Fatalf("not moved: %v", resp.Diagnostics)
	}
	if m.Chart.Repository.ValueString() != "oci://registry.example.com/charts" || m.Chart.Chart.ValueString() != "podinfo" {
		t.Errorf("chart = %s %s", m.Chart.Repository, m.Chart.Chart)
	}
	// helm_release's defaults are not written into stevedore's attributes.
	if !m.Timeout.IsNull() || !m.MaxHistory.IsNull() || m.Install != nil || m.Upgrade != nil || m.Uninstall != nil ||
		!m.Values.IsNull() || !m.Set.IsNull() || !m.SetList.IsNull() || !m.SetSensitive.IsNull() {
		t.Errorf("defaults carried: timeout %s, max_history %s, install %v, upgrade %v, uninstall %v, values %s, set %s %s %s",
			m.Timeout, m.MaxHistory, m.Install, m.Upgrade, m.Uninstall, m.Values, m.Set, m.SetList, m.SetSensitive)
	}
}

// description is carried from both schema versions, so that the same
// configuration plans no upgrade after the move (setTriggers compares it with
// the state's); helm_release's null and "" are Helm's own text, null here.
func TestMoveHelmReleaseDescription(t *testing.T) {
	for _, tc := range []struct {
		version int64
		raw     string
	}{{1, helmReleaseStateV1}, {2, helmReleaseStateV2}} {
		for desc, want := range map[string]string{`"deployed by CI"`: "deployed by CI", `""`: "", "null": ""} {
			raw := strings.Replace(tc.raw, `"description": null`, `"description": `+desc, 1)
			m, resp := moveHelmRelease(t, "hashicorp/helm", tc.version, raw)
			if m == nil {
				t.Fatalf("version %d, description %s: not moved: %v", tc.version, desc, resp.Diagnostics)
			}
			if got := m.Description; got.ValueString() != want || (want == "") != got.IsNull() {
				t.Errorf("version %d, description %s: moved description %s, want %q (null when empty)", tc.version, desc, got, want)
			}
			spec, _, diags := helmReleaseSpec(context.Background(), m)
			if diags.HasError() || spec.Description != want {
				t.Errorf("version %d, description %s: spec description %q (%v), want %q", tc.version, desc, spec.Description, diags, want)
			}
			// The moved state and a configuration with the same description
			// force no upgrade; another description does.
			plan := *m
			setTriggers(context.Background(), spec, m, &plan)
			if spec.Force {
				t.Errorf("version %d, description %s: the same description forces an upgrade", tc.version, desc)
			}
			plan.Description = types.StringValue("another")
			setTriggers(context.Background(), spec, m, &plan)
			if !spec.Force {
				t.Errorf("version %d, description %s: a new description forces no upgrade", tc.version, desc)
			}
		}
	}
}

func TestMoveHelmReleaseVersions(t *testing.T) {
	for _, v := range []int64{0, 3} {
		_, resp := moveHelmRelease(t, "hashicorp/helm", v, helmReleaseStateV2)
		if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), "schema version") {
			t.Errorf("version %d: %v, want an unsupported version error", v, resp.Diagnostics)
		}
	}
	_, resp := moveHelmRelease(t, "hashicorp/helm", 2, `{"name": "x"}`)
	if !resp.Diagnostics.HasError() {
		t.Errorf("a state without a chart moved")
	}
}

func normalizeForTest(t *testing.T, v map[string]any) any {
	t.Helper()
	var out any
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := jsonUnmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	jsonMarshal   = json.Marshal
	jsonUnmarshal = json.Unmarshal
)
