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
// revision and an empty plan; stevedore's upgrade keeps the release's method
// (`auto`: client-side after Helm 3, server-side after Helm 4) and leaves the
// record the CLI wrote as it was; the CLI then upgrades what stevedore wrote
// (Helm 4: with the same values, without --force-conflicts: our fields are
// in our Apply entry) and rolls back to it, and stevedore plans the way back.
//
// Not parallel itself, as TestAccProvider_statePathsKeepPlanFidelity: its
// cases, two levels down, run in the serial phase rather than last.
func TestAccHelmRelease_helmCLIs(t *testing.T) {
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
				// What stevedore's upgrades write (auto: the method of the
				// latest revision; a Helm 3 record has none: client-side).
				ourMethod := map[string]string{"helm3": "csa", "helm4": "ssa"}[cli]
				// And the CLI's upgrades and rollbacks after stevedore's writes
				// (Helm 4's auto: the method of the last or target revision).
				laterMethod := map[string]string{"helm3": "", "helm4": "ssa"}[cli]
				applyMethod := statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("status").AtMapKey("apply_method"), knownvalue.StringExact(ourMethod))
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
							// Imported: chart.path set in state, nothing else
							// changes, no new revision.
							Config: release(2) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								expectImportSetsChartPath(releaseAddr),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
								applyMethod,
							},
						},
						{
							// Upgraded by stevedore with the release's method; the CLI's
							// record keeps what it wrote.
							Config: release(3),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("status").AtMapKey("apply_method"), knownvalue.StringExact(ourMethod)),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
								applyMethod,
							},
							Check: resource.ComposeTestCheckFunc(record(1, installMethod), record(2, ourMethod)),
						},
						{
							// The CLI upgrades what stevedore wrote: with the same values
							// (Helm 4: server-side, and no conflict without
							// --force-conflicts), then with another replica count, which
							// under server-side apply is a field stevedore owns: Helm 4
							// takes it with --force-conflicts. stevedore plans the way back.
							PreConfig: func() {
								helm("upgrade", "podinfo", chartDir, "--namespace", ns, "--reuse-values")
								force := map[string][]string{"helm3": nil, "helm4": {"--force-conflicts"}}[cli]
								helm(append([]string{"upgrade", "podinfo", chartDir, "--namespace", ns, "--reuse-values", "--set", "replicaCount=5"}, force...)...)
							},
							Config: release(3),
							ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
								plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
							}},
							ConfigStateChecks: []statecheck.StateCheck{
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(5)),
								applyMethod,
							},
							// The CLI's revisions, superseded by stevedore, as the CLI wrote them.
							Check: resource.ComposeTestCheckFunc(record(3, laterMethod), record(4, laterMethod), record(5, ourMethod)),
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
								statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(7)),
								applyMethod,
							},
							// The CLI's rollback (to our revision 2: its method), superseded
							// by stevedore, as the CLI wrote it (revisions 1 and 2 are pruned
							// by then: max_history 5).
							Check: resource.ComposeTestCheckFunc(record(6, laterMethod), record(7, ourMethod)),
						},
					},
				}
			})
		})
	}
}
