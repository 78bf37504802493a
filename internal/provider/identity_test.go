package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// expectReleaseIdentity checks the release's identity: its namespace is
// the state's storage_namespace, its release_name the state's.
func expectReleaseIdentity(storageNS, releaseName string) []statecheck.StateCheck {
	return []statecheck.StateCheck{
		statecheck.ExpectIdentity(releaseAddr, map[string]knownvalue.Check{
			"namespace":    knownvalue.StringExact(storageNS),
			"release_name": knownvalue.StringExact(releaseName),
		}),
		statecheck.ExpectIdentityValueMatchesStateAtPath(releaseAddr, tfjsonpath.New("namespace"), tfjsonpath.New("storage_namespace")),
		statecheck.ExpectIdentityValueMatchesState(releaseAddr, tfjsonpath.New("release_name")),
	}
}

// TestAccHelmRelease_identity: a release as Flux makes one for a HelmRelease
// with a target namespace (release apps-podinfo, stored in flux-system) has
// the identity {namespace = flux-system, release_name = apps-podinfo}, as
// helm_release names a release. An import block with that identity refuses
// it: the release carries this instance's owner ID, and an import by
// identity (what `terraform query -generate-config-out` writes for every
// release it lists) cannot tell another configuration's release from a
// killed apply's of this one, so it takes no stevedore_helmrelease's release
// (the ownership error, whose advice gives the import ID that does). The
// import by identity of a release Flux made, with its name and target
// namespace from the release, is TestAccQuery_helmReleases's.
func TestAccHelmRelease_identity(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		rel := apps + "-podinfo"
		body := fmt.Sprintf("  target_namespace = %q\n", apps)
		return resource.TestCase{
			TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliIdentity)},
			CheckDestroy:           storedIn(t, fs, rel, nil, apps),
			Steps: []resource.TestStep{
				{
					Config:            releaseConfigByDigest(cacheDir, chartDir, fs, body),
					ConfigStateChecks: expectReleaseIdentity(fs, rel),
					Check:             storedIn(t, fs, rel, []string{"1:deployed"}, apps),
				},
				{
					ResourceName:    releaseAddr,
					ImportState:     true,
					ImportStateKind: resource.ImportBlockWithResourceIdentity,
					ExpectError: regexp.MustCompile(`(?s)stevedore\s+does\s+not\s+take\s+over.*another\s+instance\s+of\s+a\s+stevedore_helmrelease.*with\s+the\s+ID\s+"` +
						fs + `/podinfo@` + apps + `"`),
				},
			},
		}
	})
}

// TestAccHelmRelease_identityIsWhereHelmStoresTheRelease: a release whose
// storage_namespace is not its namespace has the storage namespace in its
// identity, and a change of namespace, an upgrade in place, keeps the
// identity (the identity is immutable, so the CLI would refuse a change).
func TestAccHelmRelease_identityIsWhereHelmStoresTheRelease(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns, other, storage := uniqueNamespace(t, "hr-id"), uniqueNamespace(t, "hr-id-to"), uniqueNamespace(t, "hr-id-st")
		cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
		config := func(namespace string) string {
			return strings.Replace(releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  release_name      = "podinfo"
  storage_namespace = %q
  target_namespace  = %q`, storage, ns)), fmt.Sprintf("namespace = %q", ns), fmt.Sprintf("namespace = %q", namespace), 1)
		}
		return resource.TestCase{
			TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliIdentity)},
			CheckDestroy:           storedIn(t, storage, "podinfo", nil, ns),
			Steps: []resource.TestStep{
				{
					Config:            config(ns),
					ConfigStateChecks: expectReleaseIdentity(storage, "podinfo"),
					Check:             storedIn(t, storage, "podinfo", []string{"1:deployed"}, ns),
				},
				{
					Config:            config(other),
					ConfigPlanChecks:  expectAction(plancheck.ResourceActionUpdate),
					ConfigStateChecks: expectReleaseIdentity(storage, "podinfo"),
					Check:             storedIn(t, storage, "podinfo", []string{"1:superseded", "2:deployed"}, ns),
				},
			},
		}
	})
}

// TestAccHelmRelease_importByIdentity: a release installed with
// `helm install -n <ns> podinfo` is imported with the identity a helm_release
// of hashicorp/helm has, {namespace, release_name}, into the configuration
// that matches it: no change but chart.path set in state, and no revision.
// An identity that names no release fails, naming it.
func TestAccHelmRelease_importByIdentity(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-identity")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		body := `  values = { replicaCount = 2 }`
		importing := func(releaseName string) string {
			return releaseConfig(cacheDir, chartDir, ns, body) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  identity = {
    namespace    = %q
    release_name = %q
  }
}
`, ns, releaseName)
		}
		first, _ := importSteps(t, cacheDir, chartDir, ns, body, "unused", func(chartPath string) error {
			return testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", chartPath, map[string]any{"replicaCount": 2})
		})
		return resource.TestCase{
			TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliIdentity)},
			CheckDestroy:           storedIn(t, ns, "podinfo", nil),
			Steps: []resource.TestStep{
				first,
				{
					Config:      importing("absent"),
					ExpectError: regexp.MustCompile(`no\s+release\s+"absent"\s+in\s+storage\s+namespace\s+"` + ns + `"`),
				},
				{
					Config:           importing("podinfo"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectImportSetsChartPath(releaseAddr)}},
					ConfigStateChecks: append(expectReleaseIdentity(ns, "podinfo"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1))),
					Check: storedIn(t, ns, "podinfo", []string{"1:deployed"}),
				},
			},
		}
	})
}

// TestAccResourceSet_identity: a set's identity is {namespace, name}, each
// its attribute. An import block with it, planned over the same
// configuration, finds the set with that identity. A set that a `removed`
// block took out of the state, its objects left in place, is imported back
// with an import block's identity: the import reads its objects as the set
// applied them, which is the configuration, so the plan is a no-op; the
// objects stay, the identity is the same.
func TestAccResourceSet_identity(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "rs-identity")
		set := fmt.Sprintf(`
resource "stevedore_resourceset" "paths" {
  name      = "identity"
  namespace = %q
  resources = [
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "one" }, data = { a = "b" } },
  ]
}
`, ns)
		identity := []statecheck.StateCheck{
			statecheck.ExpectIdentity(setAddr, map[string]knownvalue.Check{
				"namespace": knownvalue.StringExact(ns),
				"name":      knownvalue.StringExact("identity"),
			}),
			statecheck.ExpectIdentityValueMatchesState(setAddr, tfjsonpath.New("namespace")),
			statecheck.ExpectIdentityValueMatchesState(setAddr, tfjsonpath.New("name")),
		}
		objectThere := func(*terraform.State) error {
			if !exists(t, "v1", "ConfigMap", ns, "one") {
				return fmt.Errorf("ConfigMap %s/one missing", ns)
			}
			return nil
		}
		return resource.TestCase{
			TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliIdentity)},
			CheckDestroy: func(*terraform.State) error {
				if exists(t, "v1", "ConfigMap", ns, "one") {
					return fmt.Errorf("ConfigMap %s/one left after destroy", ns)
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					Config:            providerBlock("") + set,
					ConfigStateChecks: identity,
					Check:             objectThere,
				},
				{
					ResourceName:    setAddr,
					ImportState:     true,
					ImportStateKind: resource.ImportBlockWithResourceIdentity,
					// An imported set's configuration attributes are null
					// until its first apply.
					ExpectNonEmptyPlan: true,
				},
				{
					Config: providerBlock("") + `
removed {
  from = stevedore_resourceset.paths
  lifecycle {
    destroy = false
  }
}
`,
					Check: objectThere,
				},
				{
					Config: providerBlock("") + set + fmt.Sprintf(`
import {
  to = stevedore_resourceset.paths
  identity = {
    namespace = %q
    name      = "identity"
  }
}
`, ns),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(setAddr, plancheck.ResourceActionNoop),
					}},
					ConfigStateChecks: identity,
					Check:             objectThere,
				},
			},
		}
	})
}
