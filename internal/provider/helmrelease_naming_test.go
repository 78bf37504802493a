package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	tfresource "github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// storedRevisions is releaseRevisions that returns no revisions for a release
// that is not in storage namespace ns.
func storedRevisions(t *testing.T, ns, name string) []string {
	t.Helper()
	revs, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

// storedIn checks that release name is in storage namespace ns with the
// revisions want, and in none of the namespaces notIn.
func storedIn(t *testing.T, ns, name string, want []string, notIn ...string) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := storedRevisions(t, ns, name); !slices.Equal(got, want) {
			return fmt.Errorf("release %s in storage namespace %s: revisions %v, want %v", name, ns, got, want)
		}
		for _, other := range notIn {
			if got := storedRevisions(t, other, name); len(got) > 0 {
				return fmt.Errorf("release %s is also in storage namespace %s: %v", name, other, got)
			}
		}
		return nil
	}
}

func expectStr(attr, want string) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(releaseAddr, releaseAttr(attr), knownvalue.StringExact(want))
}

func expectAction(a plancheck.ResourceActionType) tfresource.ConfigPlanChecks {
	return tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(releaseAddr, a)}}
}

// TestAccHelmRelease_storageNamespaceDefaultsToNamespace: a release that Flux
// would store in flux-system with its objects in apps (namespace flux-system,
// target_namespace apps, no storage_namespace) is release apps-podinfo with
// its Secrets in flux-system, not in apps. Setting storage_namespace to
// another namespace replaces the release: it is uninstalled from flux-system
// and installed in the new storage.
func TestAccHelmRelease_storageNamespaceDefaultsToNamespace(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
		other := uniqueNamespace(t, "hr-storage")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		rel := apps + "-podinfo"
		config := func(extra string) string {
			return releaseConfig(cacheDir, chartDir, fs, fmt.Sprintf("  target_namespace = %q\n%s", apps, extra))
		}
		return tfresource.TestCase{
			CheckDestroy: storedIn(t, fs, rel, nil, other, apps),
			Steps: []tfresource.TestStep{
				{
					Config:           config(""),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionCreate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("release_name", rel),
						expectStr("storage_namespace", fs),
					},
					Check: tfresource.ComposeTestCheckFunc(
						storedIn(t, fs, rel, []string{"1:deployed"}, apps),
						func(*terraform.State) error {
							if !exists(t, "apps/v1", "Deployment", apps, rel) {
								return fmt.Errorf("no Deployment %s in the target namespace %s", rel, apps)
							}
							return nil
						},
					),
				},
				{
					// A change of the effective storage namespace replaces.
					Config:            config(fmt.Sprintf("  storage_namespace = %q\n", other)),
					ConfigPlanChecks:  expectAction(plancheck.ResourceActionDestroyBeforeCreate),
					ConfigStateChecks: []statecheck.StateCheck{expectStr("storage_namespace", other)},
					Check:             storedIn(t, other, rel, []string{"1:deployed"}, fs, apps),
				},
			},
		}
	})
}

// TestAccHelmRelease_storageNamespaceOfExistingStateKept: a release created
// when storage_namespace defaulted to the target namespace keeps its storage
// while storage_namespace is not configured: its state plans no change (no
// uninstall and install merely because the default changed). The state is
// the one the old default wrote: storage_namespace is optional and computed,
// so the state of a release created with storage_namespace equal to the
// target namespace is the same as that of one created without it under the
// old default. Setting storage_namespace moves the release (a replace); a
// release replaced for another reason (a new release_name) is a new release
// and takes the new default.
func TestAccHelmRelease_storageNamespaceOfExistingStateKept(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		rel := apps + "-podinfo"
		config := func(extra string) string {
			return releaseConfig(cacheDir, chartDir, fs, fmt.Sprintf("  target_namespace = %q\n%s", apps, extra))
		}
		return tfresource.TestCase{
			CheckDestroy: tfresource.ComposeTestCheckFunc(storedIn(t, fs, rel, nil, apps), storedIn(t, fs, "renamed", nil, apps)),
			Steps: []tfresource.TestStep{
				{
					// What the old default wrote: storage in the target namespace.
					Config:            config(fmt.Sprintf("  storage_namespace = %q\n", apps)),
					ConfigStateChecks: []statecheck.StateCheck{expectStr("storage_namespace", apps)},
					Check:             storedIn(t, apps, rel, []string{"1:deployed"}, fs),
				},
				{
					// The configuration as it was written for the old default.
					Config: config(""),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectEmptyPlan(),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("storage_namespace"), knownvalue.StringExact(apps)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{expectStr("storage_namespace", apps)},
					Check:             storedIn(t, apps, rel, []string{"1:deployed"}, fs),
				},
				{
					// Moving it: storage_namespace set explicitly replaces.
					Config:            config(fmt.Sprintf("  storage_namespace = %q\n", fs)),
					ConfigPlanChecks:  expectAction(plancheck.ResourceActionDestroyBeforeCreate),
					ConfigStateChecks: []statecheck.StateCheck{expectStr("storage_namespace", fs)},
					Check:             storedIn(t, fs, rel, []string{"1:deployed"}, apps),
				},
				{
					// Back in apps, then a replacement for another reason: the new
					// release takes the default.
					Config: config(fmt.Sprintf("  storage_namespace = %q\n", apps)),
					Check:  storedIn(t, apps, rel, []string{"1:deployed"}, fs),
				},
				{
					Config:           config(`  release_name = "renamed"` + "\n"),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionDestroyBeforeCreate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("release_name", "renamed"),
						expectStr("storage_namespace", fs),
					},
					Check: tfresource.ComposeTestCheckFunc(
						storedIn(t, fs, "renamed", []string{"1:deployed"}, apps),
						storedIn(t, fs, rel, nil, apps),
					),
				},
			},
		}
	})
}

// importSteps are the steps of an import test: the first builds the
// artifact and installs its chart outside stevedore with install; the
// configuration returned imports the release with id into a release of the
// artifact in ns, with body.
func importSteps(t *testing.T, cacheDir, chartDir, ns, body, id string, install func(chartPath string) error) (tfresource.TestStep, string) {
	artifactOnly := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(chartDir))
	first := tfresource.TestStep{
		Config: artifactOnly,
		Check: func(s *terraform.State) error {
			return install(s.RootModule().Resources[artifactAddr].Primary.Attributes["path"])
		},
	}
	return first, releaseConfig(cacheDir, chartDir, ns, body) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = %q
}
`, id)
}

// TestAccHelmRelease_importFluxReleaseByHelmReleaseID: a release that Flux
// made for HelmRelease flux-system/podinfo with targetNamespace apps (release
// apps-podinfo, stored in flux-system, objects in apps, each labelled
// helm.toolkit.fluxcd.io/name|namespace by helm-controller's origin
// post-renderer: testenv.FluxInstall) is imported with the HelmRelease's own
// names, `flux-system/podinfo@apps`, into its translated configuration
// (namespace, target_namespace, values; no release_name, no
// storage_namespace): the plan neither replaces nor upgrades (it only sets
// chart.path in state), and shows no drift (docs/guides/migrating-from-flux.md).
func TestAccHelmRelease_importFluxReleaseByHelmReleaseID(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		rel := apps + "-podinfo"
		values := map[string]any{"replicaCount": 2, "config": map[string]any{"greeting": "flux"}}
		body := fmt.Sprintf(`  target_namespace = %q
  values = { replicaCount = 2, config = { greeting = "flux" } }`, apps)
		first, withImport := importSteps(t, cacheDir, chartDir, fs, body, fs+"/podinfo@"+apps, func(chartPath string) error {
			name, err := testenv.FluxInstall(testenv.Need(t).Cluster.Kubeconfig, fs, "podinfo", apps, chartPath, values)
			if err == nil && name != rel {
				err = fmt.Errorf("Flux named the release %q, want %q", name, rel)
			}
			return err
		})
		return tfresource.TestCase{
			CheckDestroy: storedIn(t, fs, rel, nil, apps),
			Steps: []tfresource.TestStep{
				first,
				{
					Config: withImport,
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectImportSetsChartPath(releaseAddr),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("id", fs+"/podinfo"),
						expectStr("release_name", rel),
						expectStr("storage_namespace", fs),
						expectStr("target_namespace", apps),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
					},
					Check: tfresource.ComposeTestCheckFunc(
						storedIn(t, fs, rel, []string{"1:deployed"}, apps),
						fluxLabelled(t, apps, fs, "podinfo"),
					),
				},
			},
		}
	})
}

// fluxLabelled checks that the Deployment of the release in ns still carries
// the origin labels of HelmRelease hrNamespace/hrName: nothing rewrote it.
func fluxLabelled(t *testing.T, ns, hrNamespace, hrName string) tfresource.TestCheckFunc {
	return func(*terraform.State) error {
		var list appsv1.DeploymentList
		sel := client.MatchingLabels{"helm.toolkit.fluxcd.io/name": hrName, "helm.toolkit.fluxcd.io/namespace": hrNamespace}
		if err := testClient(t).List(context.Background(), &list, client.InNamespace(ns), sel); err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d Deployments in %s carry the origin labels of HelmRelease %s/%s, want 1", len(list.Items), ns, hrNamespace, hrName)
		}
		return nil
	}
}

// TestAccHelmRelease_importHandInstalledByExtendedID: release podinfo,
// installed by hand in storage flux-system with its objects in apps, is not
// what Flux's rules make of any HelmRelease named podinfo: the short IDs that
// would have named it before import IDs named the HelmRelease are refused
// with the ID that imports it, and the extended form
// `flux-system/podinfo@apps,release_name=podinfo` imports it into a
// configuration that sets release_name: no replace, no change but
// chart.path set in state.
func TestAccHelmRelease_importHandInstalledByExtendedID(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		fs, apps := uniqueNamespace(t, "flux-system"), uniqueNamespace(t, "apps")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		extended := fs + "/podinfo@" + apps + ",release_name=podinfo"
		body := fmt.Sprintf("  target_namespace = %q\n  release_name = \"podinfo\"\n", apps)
		install := func(chartPath string) error {
			return testenv.HelmInstallStored(testenv.Need(t).Cluster.Kubeconfig, fs, apps, "podinfo", chartPath, nil)
		}
		first, withImport := importSteps(t, cacheDir, chartDir, fs, body, extended, install)
		_, oldMeaning := importSteps(t, cacheDir, chartDir, fs, body, fs+"/podinfo@"+apps, install)
		_, wrongTarget := importSteps(t, cacheDir, chartDir, fs, body, fs+"/podinfo", install)
		words := func(s string) string { return strings.Join(strings.Fields(regexp.QuoteMeta(s)), `\s+`) }
		return tfresource.TestCase{
			CheckDestroy: storedIn(t, fs, "podinfo", nil, apps),
			Steps: []tfresource.TestStep{
				first,
				{
					// The old meaning of ns/name@target: release name in ns.
					Config: oldMeaning,
					ExpectError: regexp.MustCompile(`(?s)no\s+release\s+"` + apps + `-podinfo"\s+in\s+storage\s+namespace\s+"` + fs +
						`".*` + words(`imported with the ID "`+extended+`"`)),
				},
				{
					// The release's objects are not in the ID's namespace.
					Config: wrongTarget,
					ExpectError: regexp.MustCompile(`(?s)` + words("has its objects in namespace "+apps+", not in "+fs) +
						`.*` + words(`import it as "`+extended+`"`)),
				},
				{
					Config:           withImport,
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectImportSetsChartPath(releaseAddr)}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("release_name", "podinfo"),
						expectStr("storage_namespace", fs),
						expectStr("target_namespace", apps),
					},
					Check: storedIn(t, fs, "podinfo", []string{"1:deployed"}, apps),
				},
			},
		}
	})
}

// TestHelmReleaseImport_invalidIDShowsBothForms: an ID that is neither form
// is an error diagnostic that shows both, with examples; nothing is read.
func TestHelmReleaseImport_invalidIDShowsBothForms(t *testing.T) {
	r := &helmReleaseResource{}
	for _, id := range []string{"podinfo", "apps/podinfo@", "apps/podinfo,release=web", "a/b/c"} {
		resp := &resource.ImportStateResponse{}
		r.ImportState(context.Background(), resource.ImportStateRequest{ID: id}, resp)
		if !resp.Diagnostics.HasError() || len(resp.Diagnostics) != 1 {
			t.Errorf("%q: diagnostics %v", id, resp.Diagnostics)
			continue
		}
		d := resp.Diagnostics[0]
		if d.Summary() != "Invalid import ID" {
			t.Errorf("%q: summary %q", id, d.Summary())
		}
		for _, want := range []string{`"` + id + `"`, "<namespace>/<name>[@<target_namespace>]", ",release_name=<release>",
			",storage_namespace=<namespace>", "flux-system/podinfo@apps", "flux-system/podinfo@apps,release_name=podinfo"} {
			if !strings.Contains(d.Detail(), want) {
				t.Errorf("%q: %q does not say %q", id, d.Detail(), want)
			}
		}
	}
}

// TestAccHelmRelease_renameKeepsTheRelease: a new name or namespace of a
// release whose release name, storage namespace and target namespace are
// set explicitly is the same Helm release, renamed as a HelmRelease would be:
// an in-place upgrade (one new revision, no uninstall) that puts the new
// origin labels on its objects, and an id that follows.
func TestAccHelmRelease_renameKeepsTheRelease(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) tfresource.TestCase {
		ns, other := uniqueNamespace(t, "hr-ren"), uniqueNamespace(t, "hr-ren-to")
		cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
		config := func(namespace string) string {
			return strings.Replace(releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  release_name      = "podinfo"
  storage_namespace = %q
  target_namespace  = %q`, ns, ns)), fmt.Sprintf("namespace = %q", ns), fmt.Sprintf("namespace = %q", namespace), 1)
		}
		originLabel := func(want string) tfresource.TestCheckFunc {
			return checkObjectField(t, "v1", "ConfigMap", ns, "podinfo", want, "metadata", "labels", "stevedore.dev/namespace")
		}
		return tfresource.TestCase{
			Steps: []tfresource.TestStep{
				{
					Config: config(ns),
					Check:  tfresource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:deployed"), originLabel(ns)),
				},
				{
					Config: config(other),
					ConfigPlanChecks: tfresource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("id"), knownvalue.StringExact(other+"/podinfo")),
						plancheck.ExpectUnknownValue(releaseAddr, tfjsonpath.New("version")),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("id"), knownvalue.StringExact(other+"/podinfo")),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: tfresource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"), originLabel(other)),
				},
			},
		}
	})
}
