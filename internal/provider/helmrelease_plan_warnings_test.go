package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// wrappedText is a regexp of text as the CLIs print a diagnostic: they wrap
// its lines at spaces, so any run of white space matches one.
func wrappedText(text string) string {
	return strings.Join(strings.Fields(regexp.QuoteMeta(text)), `\s+`)
}

// TestAccHelmRelease_createWarnsOfATakenNameWhateverTheChart: a new release
// whose release name is taken by a release it did not install (a `helm
// install`) is a plan warning as soon as its name and namespaces are known,
// whatever the chart: with the chart's digest known at plan (its artifact is
// created in the same apply, and built at plan), and with it unknown at plan
// (the artifact's source comes from a resource created in the same apply).
// The apply then refuses, and the other release is left as it was.
func TestAccHelmRelease_createWarnsOfATakenNameWhateverTheChart(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-taken")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", chartDir, map[string]any{"replicaCount": 2}); err != nil {
			t.Fatal(err)
		}
		// source is the artifact's source_path: a literal, or a value
		// known only after apply.
		config := func(source string) string {
			return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "terraform_data" "source" {
  input = %s
}

resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = { replicaCount = 1 }
}
`, hcl(chartDir), source, ns)
		}
		taken := expectWarning(rec, "Release already exists", regexp.MustCompile(`^helmrelease `+ns+`/podinfo: release podinfo already exists in storage namespace `+ns+
			` \(deployed, revision 1, chart podinfo@1\.0\.0\), made by .*Apply refuses to create this resource over it.*with the ID "`+ns+`/podinfo"`))
		untouched := func(*terraform.State) error {
			if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
				return fmt.Errorf("the existing release was changed: %v", got)
			}
			return nil
		}
		return resource.TestCase{
			CheckDestroy: untouched,
			Steps: []resource.TestStep{
				{
					// The artifact is built at plan: the chart's digest is known.
					PreConfig: rec.resetWarnings,
					Config:    config(hcl(chartDir)),
					PlanOnly:  true, ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
						taken,
					}},
				},
				{
					// The artifact's source is known after apply only: so is
					// the chart's digest.
					PreConfig: rec.resetWarnings,
					Config:    config("terraform_data.source.output"),
					PlanOnly:  true, ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectUnknownValue(artifactAddr, tfjsonpath.New("digest")),
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
						taken,
					}},
				},
				{
					Config: config("terraform_data.source.output"),
					ExpectError: regexp.MustCompile(`(?s)Release already exists.*` + wrappedText(`release podinfo already exists in storage namespace `+ns) +
						`.*` + wrappedText(`import it (an import block, or terraform import) with the ID "`+ns+`/podinfo"`)),
					Check: untouched,
				},
			},
		}
	})
}

// TestAccHelmRelease_importIDWithoutTargetListsCandidates: an import ID
// without `@<target>` for a release that Flux stored as <target>-<name> (a
// HelmRelease with a target namespace) fails, and the error lists the
// releases of that storage namespace the ID would name with a target, with
// the IDs that import them.
func TestAccHelmRelease_importIDWithoutTargetListsCandidates(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-imp-nf")
		apps := uniqueNamespace(t, "apps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		stored, err := testenv.FluxInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", apps, chartDir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if stored != apps+"-podinfo" {
			t.Fatalf("Flux's release is %s, want %s-podinfo", stored, apps)
		}
		config := releaseConfig(cacheDir, chartDir, ns, `target_namespace = "`+apps+`"`) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns)
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: config,
				ExpectError: regexp.MustCompile(`(?s)Cannot import the release.*` + wrappedText(`no release "podinfo" in storage namespace "`+ns+`"`) + `.*` +
					wrappedText(`these releases of that storage namespace would be imported with: "`+ns+`/podinfo@`+apps+`" (release `+stored+`)`)),
			}},
		}
	})
}

// TestAccHelmRelease_changedOutsideWarningNamesTheChart: a release upgraded
// outside stevedore to another chart version (helm upgrade, 1.0.0 -> 1.0.1)
// is a plan warning that names the release as its import ID does (its
// resource's namespace and name, which are its storage namespace and release
// name here), the revision, and the chart it now runs against the one the
// configuration gives; apply upgrades it back.
func TestAccHelmRelease_changedOutsideWarningNamesTheChart(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-outside")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := releaseConfig(cacheDir, chartDir, ns, `values = { replicaCount = 1 }`)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: config, Check: checkRevisions(t, ns, "podinfo", "1:deployed")},
				{
					PreConfig: func() {
						rec.resetWarnings()
						newer, err := testenv.PackageChart(chartCopy(t, "1.0.1"), "", t.TempDir())
						if err != nil {
							t.Fatal(err)
						}
						if err := testenv.HelmUpgrade(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", newer, map[string]any{"replicaCount": 1}); err != nil {
							t.Fatal(err)
						}
					},
					Config:   config,
					PlanOnly: true, ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectWarning(rec, "Release changed outside stevedore", regexp.MustCompile(`^helmrelease `+ns+`/podinfo: release podinfo in storage namespace `+ns+
							` was changed outside stevedore: revision 2 \(Upgrade complete, by another client\), expected revision 1; its chart is podinfo@1\.0\.1, not podinfo@1\.0\.0`)),
					}},
				},
				{
					Config: config,
					Check:  checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed"),
				},
			},
		}
	})
}
