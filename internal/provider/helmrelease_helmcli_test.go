package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmRelease_helmCLIs: a release installed by the real Helm CLI, 3
// and 4 (Helm 4 installs with server-side apply), is imported with no new
// revision and an empty plan; stevedore's upgrade leaves the record the CLI
// wrote as it was (Helm 4's `apply_method` kept); the CLI then upgrades and
// rolls back what stevedore wrote, and stevedore plans the way back.
func TestAccHelmRelease_helmCLIs(t *testing.T) {
	t.Parallel()
	for _, cli := range testenv.HelmCLIs {
		t.Run(cli, func(t *testing.T) {
			t.Parallel()
			accTestEach(t, func(t *testing.T) resource.TestCase {
				ns := uniqueNamespace(t, "hr-"+cli)
				cacheDir := t.TempDir()
				chartDir := chartCopy(t, "1.0.0")
				kc := testenv.Need(t).Cluster.Kubeconfig
				helm := func(args ...string) {
					t.Helper()
					if _, err := testenv.HelmCLI(testenv.Context(t), kc, cli, args...); err != nil {
						t.Fatal(err)
					}
				}
				// What the CLI writes as the apply method of an install.
				installMethod := map[string]string{"helm3": "", "helm4": "ssa"}[cli]
				// And of an upgrade or rollback after stevedore's client-side
				// writes (Helm 4's auto: the method of the last or target revision).
				laterMethod := map[string]string{"helm3": "", "helm4": "csa"}[cli]
				record := func(version int, method string) resource.TestCheckFunc {
					return func(*terraform.State) error {
						rls, err := testenv.ReleaseRecord(kc, ns, "podinfo", version)
						if err != nil {
							return err
						}
						if rls.ApplyMethod != method {
							return fmt.Errorf("podinfo.v%d: apply_method %q, want %q", version, rls.ApplyMethod, method)
						}
						return nil
					}
				}
				artifactOnly := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(chartDir))
				release := func(replicas int) string {
					return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`values = { replicaCount = %d, config = { greeting = "imported" } }`, replicas))
				}
				return resource.TestCase{
					Steps: []resource.TestStep{
						{
							Config: artifactOnly,
							Check: func(s *terraform.State) error {
								path := s.RootModule().Resources[artifactAddr].Primary.Attributes["path"]
								helm("install", "podinfo", path, "--namespace", ns, "--set", "replicaCount=2", "--set", "config.greeting=imported")
								return record(1, installMethod)(s)
							},
						},
						{
							// Imported: no change, no new revision.
							Config: release(2) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionNoop),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
							},
						},
						{
							// Upgraded by stevedore: the CLI's record keeps what it wrote.
							Config: release(3),
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
							},
							Check: resource.ComposeTestCheckFunc(record(1, installMethod), record(2, "csa")),
						},
						{
							// The CLI upgrades what stevedore wrote; stevedore plans the way back.
							PreConfig: func() {
								helm("upgrade", "podinfo", chartDir, "--namespace", ns, "--reuse-values", "--set", "replicaCount=5")
							},
							Config: release(3),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(4)),
							},
							// The CLI's revision, superseded by stevedore, as the CLI wrote it.
							Check: record(3, laterMethod),
						},
						{
							// The CLI rolls back to stevedore's revision 2 and reads the history.
							PreConfig: func() {
								helm("rollback", "podinfo", "2", "--namespace", ns)
								out, err := testenv.HelmCLI(testenv.Context(t), kc, cli, "history", "podinfo", "--namespace", ns)
								if err != nil {
									t.Fatal(err)
								}
								if !strings.Contains(out, "Rollback to 2") {
									t.Fatalf("%s history:\n%s", cli, out)
								}
							},
							Config: release(4),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(6)),
							},
							// The CLI's rollback, superseded by stevedore, as the CLI wrote it
							// (revision 1 is pruned by then: max_history 5).
							Check: record(5, laterMethod),
						},
					},
				}
			})
		})
	}
}
