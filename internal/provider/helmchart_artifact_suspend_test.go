package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmChartArtifact_suspend: a suspended artifact keeps its version
// when a new one in range is published, and the plan says which version it
// skipped; it cannot be created suspended, nor its source changed while
// suspended; unset, it takes the new version. Every apply is followed by an
// empty plan.
func TestAccHelmChartArtifact_suspend(t *testing.T) {
	t.Parallel()
	// Each CLI's run has its own repository: a run publishes 1.1.0.
	underCLIsEach(t, true, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		return suspendCase(t, rec)
	}, func(t *testing.T, tc resource.TestCase) { resource.UnitTest(t, tc) })
}

func suspendCase(t *testing.T, rec *protocolRecord) resource.TestCase {
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
	cacheDir := t.TempDir()
	config := func(attrs string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
  %s
}
`, hcl(repo.URL()), attrs)
	}
	version := func(v string) plancheck.PlanCheck {
		return plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact(v))
	}
	return resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config:      config("suspend = true"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Cannot create a suspended artifact`),
			},
			{
				Config:           config(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{version("1.0.0")}},
				Check:            artifactFileMatches(artifactAddr),
			},
			{
				// Suspending changes nothing of the artifact.
				Config: config("suspend = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate), version("1.0.0"),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("suspend"), knownvalue.Bool(true)),
				}},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				// 1.1.0 is published: skipped, and the plan says so.
				PreConfig: func() {
					if err := repo.PublishDir(podinfoSrc(), "1.1.0"); err != nil {
						t.Error(err)
					}
					rec.resetWarnings()
				},
				Config:   config("suspend = true"),
				PlanOnly: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
					expectWarning(rec, "Chart version skipped", regexp.MustCompile(regexp.QuoteMeta("suspend is set: version 1.1.0 in range was not taken; the artifact keeps 1.0.0"))),
				}},
			},
			{
				Config:      config("suspend = true\nvalues_files = [\"values.yaml\"]"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`Cannot change a suspended artifact`),
			},
			{
				// Resumed: the new version is taken.
				Config:           config(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{version("1.1.0")}},
				Check:            artifactFileMatches(artifactAddr),
			},
		},
	}
}
