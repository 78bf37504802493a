package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmRelease_createRefusesAnExistingRelease: a release of the same
// name that this resource did not make (a `helm install`, another
// workspace's release) is not taken over. The plan warns; apply fails before
// any Helm action with a diagnostic that says how to import it; nothing is
// saved, so destroy leaves the other release alone.
func TestAccHelmRelease_createRefusesAnExistingRelease(t *testing.T) {
	t.Parallel()
	ns := uniqueNamespace(t, "hr-exists")
	cacheDir := t.TempDir()
	chartDir := chartCopy(t, "1.0.0")
	if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", chartDir, map[string]any{"replicaCount": 2}); err != nil {
		t.Fatal(err)
	}
	untouched := func() error {
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
			return fmt.Errorf("the existing release was changed: %v", got)
		}
		return nil
	}
	accTest(t, resource.TestCase{
		CheckDestroy: func(*terraform.State) error { return untouched() },
		Steps: []resource.TestStep{{
			Config: releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 1 }`),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
			}},
			// The CLIs wrap the detail: \s+ between the words.
			ExpectError: regexp.MustCompile(`(?s)Release already exists.*release\s+podinfo\s+already\s+exists\s+in\s+storage\s+namespace\s+` + ns +
				`\s+\(deployed,\s+revision\s+1.*import\s+it.*"` + ns + `/podinfo"`),
		}},
	})
	if err := untouched(); err != nil {
		t.Error(err)
	}
}

// TestAccHelmRelease_failedUpgradeStallsAndRevertRestores: an upgrade that
// fails after changing the cluster, with no retries left, never plans empty:
// the plan shows a change and apply fails with RetriesExceeded, doing
// nothing, for as long as the configuration stays. A change of any configured
// attribute (here timeout), and a new reset_token, each reset the counters:
// one more attempt. Reverting the values then upgrades and brings the
// Deployment back to the reverted manifest, across three failed releases
// (Helm alone would leave their nodeSelector on it, and every later upgrade
// would fail).
func TestAccHelmRelease_failedUpgradeStallsAndRevertRestores(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-stall")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		body := func(nodeSelector, timeout, extra string) string {
			return fmt.Sprintf(`
  timeout = %q
  values  = { nodeSelector = %s }
  %s`, timeout, nodeSelector, extra)
		}
		const good, bad = "{}", `{ "stevedore.dev/no-such-node" = "true" }`
		// The bad values wait out their timeout: a short one (stuckTimeout),
		// and another as the changed timeout of step 4.
		const stall, stallAgain = stuckTimeout, "4s"
		config := func(nodeSelector, timeout, extra string) string {
			return releaseConfig(cacheDir, chartDir, ns, body(nodeSelector, timeout, extra))
		}
		selector := func() map[string]any {
			d := &unstructured.Unstructured{}
			d.SetAPIVersion("apps/v1")
			d.SetKind("Deployment")
			if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "podinfo"}, d); err != nil {
				t.Fatal(err)
			}
			sel, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec", "nodeSelector")
			return sel
		}
		revisions := func(want ...string) func() {
			return func() {
				if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, want) {
					t.Errorf("revisions %v, want %v", got, want)
				}
			}
		}
		failedAgain := regexp.MustCompile(`(?s)upgrade failed.*RetriesExceeded`)
		acts := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
			expectHelmAction(releaseAddr),
		}}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: config(good, "20s", "")},
				{Config: config(bad, stall, ""), ExpectError: failedAgain},
				{
					// The same configuration: the failed upgrade reached the
					// cluster; the plan is not empty, and apply fails again
					// without a Helm action.
					PreConfig: func() {
						if selector() == nil {
							t.Error("the failed upgrade did not set the nodeSelector: the test proves nothing")
						}
					},
					Config: config(bad, stall, ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: append(acts.PreApply,
						expectPriorAttr(releaseAddr, "status", "failed"),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 1),
					)},
					ExpectError: regexp.MustCompile(`RetriesExceeded`),
				},
				{
					// Another timeout is a new configuration: one more attempt.
					PreConfig:        revisions("1:deployed", "2:failed"),
					Config:           config(bad, stallAgain, ""),
					ConfigPlanChecks: acts,
					ExpectError:      failedAgain,
				},
				{
					// A new reset_token: one more attempt, same configuration.
					PreConfig:        revisions("1:deployed", "2:failed", "3:failed"),
					Config:           config(bad, stallAgain, `reset_token = "1"`),
					ConfigPlanChecks: acts,
					ExpectError:      failedAgain,
				},
				{
					// Reverted values: one upgrade, and the cluster is the
					// reverted manifest again. The harness then plans empty.
					PreConfig:        revisions("1:deployed", "2:failed", "3:failed", "4:failed"),
					Config:           config(good, "20s", `reset_token = "1"`),
					ConfigPlanChecks: acts,
					Check: func(*terraform.State) error {
						if sel := selector(); sel != nil {
							return fmt.Errorf("the failed upgrades' nodeSelector is still on the Deployment: %v", sel)
						}
						if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:failed", "3:failed", "4:failed", "5:deployed"}) {
							return fmt.Errorf("revisions %v", got)
						}
						return nil
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_importedThenUpdatedAndCorrected: every path that writes
// state after an import returns what the plan promised. Import cannot name
// the chart when the cache holds two different archives of podinfo 1.0.0,
// so the first apply after it fills in the chart block without
// a Helm action (its chart_digest was unknown before); the first drift
// correction of the imported release keeps post_renderers_digest (no release
// is made). Each apply is followed by the harness's empty plan.
func TestAccHelmRelease_importedThenUpdatedAndCorrected(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-impfix")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		// Another podinfo 1.0.0, whose archive differs by a comment.
		otherDir := chartCopy(t, "1.0.0")
		values, err := os.OpenFile(filepath.Join(otherDir, "values.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := values.WriteString("# another build of the same version\n"); err != nil {
			t.Fatal(err)
		}
		values.Close()
		prod := fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "prod" {
  source_path = %s
}
`, hcl(otherDir))
		artifacts := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(chartDir)) + prod
		withImport := releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 2 }`) + prod + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: artifacts,
					Check: func(s *terraform.State) error {
						path := s.RootModule().Resources[artifactAddr].Primary.Attributes["path"]
						return testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", path, map[string]any{"replicaCount": 2})
					},
				},
				{
					Config: withImport,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
					}},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					PreConfig: func() { scaleDeployment(t, ns, "podinfo", 5) },
					Config:    withImport,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectPriorDrift(releaseAddr, map[string][]string{ns + "_podinfo_apps_Deployment": {"/spec/replicas=5->2"}}),
					}},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
			},
		}
	})
}

// scaleDeployment sets the replicas of a Deployment as `kubectl scale` does.
func scaleDeployment(t *testing.T, ns, name string, replicas int64) {
	t.Helper()
	d := &unstructured.Unstructured{}
	d.SetAPIVersion("apps/v1")
	d.SetKind("Deployment")
	if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(d.Object, replicas, "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := testClient(t).Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// TestAccHelmRelease_suspend: Flux's spec.suspend. A suspended release is
// left alone: a values change is saved without an upgrade, drift is refreshed
// but not corrected (the plan is empty), and unsuspending applies what is
// pending in one upgrade. Destroy of a suspended release leaves it installed,
// as helm-controller skips the uninstall.
func TestAccHelmRelease_suspend(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-suspend")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(replicas int, suspend bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  values  = { replicaCount = %d }
  suspend = %t`, replicas, suspend))
		}
		kubeconfig := testenv.Need(t).Cluster.Kubeconfig
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:deployed"}) {
					return fmt.Errorf("destroy of a suspended release changed it: revisions %v", got)
				}
				// Left installed on purpose; the next CLI's run installs it anew.
				return testenv.HelmUninstall(kubeconfig, ns, "podinfo")
			},
			Steps: []resource.TestStep{
				{
					Config: config(1, true),
					// Nothing to leave alone yet.
					ExpectError: regexp.MustCompile(`Cannot create a suspended release`),
				},
				{Config: config(1, false)},
				{
					Config: config(2, true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					}},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					PreConfig: func() { scaleDeployment(t, ns, "podinfo", 4) },
					Config:    config(2, true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectPriorDrift(releaseAddr, map[string][]string{ns + "_podinfo_apps_Deployment": {"/spec/replicas=4->1"}}),
						plancheck.ExpectEmptyPlan(),
					}},
				},
				{
					Config: config(2, false),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue(releaseAddr, tfjsonpath.New("version")),
					}},
					Check: checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
				{Config: config(2, true)},
			},
		}
	})
}

// TestAccHelmRelease_wrongChartDigest: a chart.digest that is not the digest
// of the archive at chart.path is a plan-time error on chart.digest.
func TestAccHelmRelease_wrongChartDigest(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-digest")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		artifact := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(chartDir))
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: artifact},
				{
					Config: artifact + fmt.Sprintf(`
resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
  }
}
`, ns),
					PlanOnly: true,
					// The CLI quotes the configuration line of the attribute the
					// diagnostic is on: chart.digest.
					ExpectError: regexp.MustCompile(`(?s)digest\s+=\s+"sha256:0{64}".*is\s+not\s+the\s+digest\s+of\s+the\s+archive\s+at\s+chart\.path`),
				},
			},
		}
	})
}
