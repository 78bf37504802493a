package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccHelmRelease_serverSideApplySwitch: a release installed with
// client-side apply (install.server_side_apply = false) is moved to
// server-side apply by one upgrade (upgrade.server_side_apply = "enabled"):
// the plan shows status.apply_method csa -> ssa and names the Deployment
// whose managed fields Helm migrates, and after it the provider's field
// manager holds the Deployment's fields through an Apply entry only. Then
// another manager scales the Deployment; the next upgrade (auto: ssa) names
// the field it takes (.spec.replicas, manager "other") in a plan warning and
// in `changes`, takes it, and the next plan is empty.
func TestAccHelmRelease_serverSideApplySwitch(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-ssa")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(replicas int, extra string) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf("  values = { replicaCount = %d }\n%s", replicas, extra))
		}
		method := func(m string) statecheck.StateCheck {
			return statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("status").AtMapKey("apply_method"), knownvalue.StringExact(m))
		}
		plannedMethod := func(m string) plancheck.PlanCheck {
			return plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("status").AtMapKey("apply_method"), knownvalue.StringExact(m))
		}
		deploy := ns + "_podinfo_apps_Deployment" // inventory ID, as `changes` and `drift` name objects
		// managers checks the Deployment's managed fields: the entries of
		// the provider's manager (stevedore), by operation, and who owns
		// .spec.replicas.
		managers := func(wantOps []string, replicasOwner string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
				if err != nil {
					return err
				}
				var ops []string
				owner := ""
				for _, e := range u.GetManagedFields() {
					if e.Manager == "stevedore" {
						ops = append(ops, string(e.Operation))
					}
					var fields struct {
						Spec map[string]any `json:"f:spec"`
					}
					if e.FieldsV1 != nil && json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields) == nil {
						if _, ok := fields.Spec["f:replicas"]; ok {
							owner += e.Manager + "/" + string(e.Operation) + " "
						}
					}
				}
				if strings.Join(ops, ",") != strings.Join(wantOps, ",") {
					return fmt.Errorf("stevedore's managed fields entries: %v, want %v", ops, wantOps)
				}
				if strings.TrimSpace(owner) != replicasOwner {
					return fmt.Errorf(".spec.replicas owned by %q, want %q", owner, replicasOwner)
				}
				return nil
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:            config(1, "  install {\n    server_side_apply = false\n  }"),
					ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plannedMethod("csa")}},
					ConfigStateChecks: []statecheck.StateCheck{method("csa")},
					Check:             resource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:deployed"), managers([]string{"Update"}, "stevedore/Update")),
				},
				{
					PreConfig: rec.resetWarnings,
					Config:    config(2, "  install {\n    server_side_apply = false\n  }\n  upgrade {\n    server_side_apply = \"enabled\"\n  }"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plannedMethod("ssa"),
						expectWarning(rec, "Release moves to server-side apply", regexp.MustCompile(`status\.apply_method csa -> ssa.*client-side managed fields of .*`+regexp.QuoteMeta(deploy))),
						expectNoWarning(rec, "Apply takes fields from other field managers"),
					}},
					ConfigStateChecks: []statecheck.StateCheck{method("ssa")},
					Check: resource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
						managers([]string{"Apply"}, "stevedore/Apply")),
				},
				{
					PreConfig: func() {
						rec.resetWarnings()
						// Another writer scales the Deployment, as `kubectl
						// scale` does, under its own field manager.
						u := &unstructured.Unstructured{}
						u.SetAPIVersion("apps/v1")
						u.SetKind("Deployment")
						u.SetNamespace(ns)
						u.SetName("podinfo")
						patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`))
						if err := testClient(t).Patch(context.Background(), u, patch, &client.PatchOptions{FieldManager: "other"}); err != nil {
							t.Fatal(err)
						}
					},
					// auto: the latest revision is server-side.
					Config: config(3, ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plannedMethod("ssa"),
						expectWarning(rec, "Apply takes fields from other field managers",
							regexp.MustCompile(regexp.QuoteMeta(deploy+` .spec.replicas (manager "other")`))),
						expectNoWarning(rec, "Release moves to server-side apply"),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							knownvalue.ObjectPartial(map[string]knownvalue.Check{
								"id": knownvalue.StringExact(deploy), "type": knownvalue.StringExact("update"),
								"changes": knownvalue.ListPartial(map[int]knownvalue.Check{0: knownvalue.ObjectPartial(map[string]knownvalue.Check{
									"path": knownvalue.StringExact("/spec/replicas"), "from": knownvalue.StringExact("5"), "to": knownvalue.StringExact("3"),
								})}),
							}),
						})),
					}},
					ConfigStateChecks: []statecheck.StateCheck{method("ssa")},
					Check: resource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed"),
						managers([]string{"Apply"}, "stevedore/Apply"), replicas(t, ns, 3)),
				},
			},
		}
	})
}

// replicas checks the Deployment's spec.replicas.
func replicas(t *testing.T, ns string, want int64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
		if err != nil {
			return err
		}
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != want {
			return fmt.Errorf("spec.replicas = %d, want %d", n, want)
		}
		return nil
	}
}

// TestAccHelmRelease_chartAPIv3Refused: a chart of Helm 4's experimental
// chart API v3 is refused at plan, with a message that says so, whether the
// release names it inline or through an artifact.
func TestAccHelmRelease_chartAPIv3Refused(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-v3")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		chartYAML := filepath.Join(chartDir, "Chart.yaml")
		b, err := os.ReadFile(chartYAML)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(chartYAML, []byte(strings.Replace(string(b), "apiVersion: v2", "apiVersion: v3", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		refused := regexp.MustCompile(`(?s)source_path.*apiVersion\s+v3,\s+which\s+is\s+not\s+supported:\s+Helm\s+4's\s+chart\s+API\s+v3\s+is\s+experimental`)
		inline := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    source_path = %s
  }
}
`, ns, hcl(chartDir))
		return resource.TestCase{Steps: []resource.TestStep{
			{Config: releaseConfig(cacheDir, chartDir, ns, ""), ExpectError: refused},
			{Config: inline, ExpectError: refused},
		}}
	})
}
