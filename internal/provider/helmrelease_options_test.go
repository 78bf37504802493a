package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// This file holds the acceptance tests of HelmRelease options that are
// passed to Helm: each asserts what a user sees in the cluster (objects,
// release Secrets) after apply, under both CLIs.

// getObject reads apiVersion/kind ns/name from the cluster.
func getObject(t *testing.T, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
}

// deleteAndWait deletes apiVersion/kind ns/name, if it exists, and polls
// until the API server no longer has it (a Namespace is finalized by the
// controller manager first).
func deleteAndWait(t *testing.T, apiVersion, kind, ns, name string) {
	t.Helper()
	u, err := getObject(t, apiVersion, kind, ns, name)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := testClient(t).Delete(context.Background(), u); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := getObject(t, apiVersion, kind, ns, name); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s %s/%s was not deleted", kind, ns, name)
}

// releaseSecrets are the names of the Secrets Helm stores release name's
// revisions in, in storage namespace ns (labels owner=helm, name=<release>).
func releaseSecrets(t *testing.T, ns, name string) []string {
	t.Helper()
	var l corev1.SecretList
	if err := testClient(t).List(context.Background(), &l, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": name}); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(l.Items))
	for _, s := range l.Items {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// objectField reads a string field of apiVersion/kind ns/name.
func objectField(t *testing.T, apiVersion, kind, ns, name string, fields ...string) (string, error) {
	t.Helper()
	u, err := getObject(t, apiVersion, kind, ns, name)
	if err != nil {
		return "", fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	v, _, err := unstructured.NestedString(u.Object, fields...)
	return v, err
}

// checkObjectField checks a string field of apiVersion/kind ns/name.
func checkObjectField(t *testing.T, apiVersion, kind, ns, name, want string, fields ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := objectField(t, apiVersion, kind, ns, name, fields...)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s %s/%s %s = %q, want %q", kind, ns, name, strings.Join(fields, "."), got, want)
		}
		return nil
	}
}

// deploymentReplicas is spec.replicas of Deployment ns/name.
func deploymentReplicas(t *testing.T, ns, name string) (int64, error) {
	u, err := getObject(t, "apps/v1", "Deployment", ns, name)
	if err != nil {
		return 0, fmt.Errorf("deployment %s/%s: %w", ns, name, err)
	}
	n, _, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
	return n, err
}

const noSuchNode = `{ "stevedore.dev/no-such-node" = "true" }`

// stuckTimeout is the timeout of a step whose pods can never run
// (noSuchNode) and whose wait therefore always lasts its whole timeout: a
// short one fails the same way, sooner. Steps with values that roll out keep
// a timeout their rollout meets on a busy machine.
const stuckTimeout = "3s"

// TestAccHelmRelease_installCreateNamespace: with install.create_namespace
// the namespace the release installs into is created when it is missing:
// `namespace` when there is no target_namespace (the release's storage is
// there too), and target_namespace when set (the storage stays in
// `namespace`). Each CLI's run starts with both namespaces absent.
func TestAccHelmRelease_installCreateNamespace(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		own, target := testenv.UniqueName(t, "hr-createns"), testenv.UniqueName(t, "hr-createns-tgt")
		existing := uniqueNamespace(t, "hr-createns-st")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		t.Cleanup(func() {
			for _, ns := range []string{own, target} {
				_ = testClient(t).Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			}
		})
		config := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "own" {
  name      = "podinfo"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  install {
    create_namespace = true
  }
}

resource "stevedore_helmrelease" "target" {
  name             = "podinfo"
  namespace        = %q
  target_namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  install {
    create_namespace = true
  }
}
`, hcl(chartDir), own, existing, target)
		nsExists := func(ns string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				if !exists(t, "v1", "Namespace", "", ns) {
					return fmt.Errorf("namespace %s was not created", ns)
				}
				return nil
			}
		}
		deployment := func(ns, name string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				if !exists(t, "apps/v1", "Deployment", ns, name) {
					return fmt.Errorf("no Deployment %s/%s", ns, name)
				}
				return nil
			}
		}
		return resource.TestCase{
			CheckDestroy: resource.ComposeTestCheckFunc(
				storedIn(t, own, "podinfo", nil),
				storedIn(t, existing, target+"-podinfo", nil),
			),
			Steps: []resource.TestStep{{
				PreConfig: func() {
					// Helm never deletes a namespace it created: the other CLI's
					// run left them.
					deleteAndWait(t, "v1", "Namespace", "", own)
					deleteAndWait(t, "v1", "Namespace", "", target)
				},
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("stevedore_helmrelease.own", releaseAttr("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue("stevedore_helmrelease.own", tfjsonpath.New("storage_namespace"), knownvalue.StringExact(own)),
					statecheck.ExpectKnownValue("stevedore_helmrelease.target", releaseAttr("status"), knownvalue.StringExact("deployed")),
					statecheck.ExpectKnownValue("stevedore_helmrelease.target", tfjsonpath.New("storage_namespace"), knownvalue.StringExact(existing)),
				},
				Check: resource.ComposeTestCheckFunc(
					nsExists(own),
					storedIn(t, own, "podinfo", []string{"1:deployed"}),
					deployment(own, "podinfo"),
					nsExists(target),
					storedIn(t, existing, target+"-podinfo", []string{"1:deployed"}, target),
					deployment(target, target+"-podinfo"),
				),
			}},
		}
	})
}

// TestAccHelmRelease_installDisableWait: a release whose Deployment can never
// become ready (no node matches its nodeSelector) is installed, and then
// upgraded, as deployed within a 10 s timeout when install.disable_wait and
// upgrade.disable_wait are set; with Helm's wait either would fail.
func TestAccHelmRelease_installDisableWait(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-nowait")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		body := func(replicas int) string {
			return fmt.Sprintf(`
  timeout = "10s"
  values  = { replicaCount = %d, nodeSelector = %s }
  install {
    disable_wait = true
  }
  upgrade {
    disable_wait = true
  }`, replicas, noSuchNode)
		}
		neverReady := func(*terraform.State) error {
			u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
			if err != nil {
				return err
			}
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "spec", "nodeSelector")
			if sel["stevedore.dev/no-such-node"] != "true" {
				return fmt.Errorf("the Deployment does not have the nodeSelector no node matches: %v", sel)
			}
			if n, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas"); n != 0 {
				return fmt.Errorf("the Deployment has %d ready replicas: the test proves nothing", n)
			}
			return nil
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: releaseConfig(cacheDir, chartDir, ns, body(1)),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("status", "deployed"),
						expectBookField(rec, ns+"/podinfo", "install_failures", 0),
					},
					Check: resource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:deployed"), neverReady),
				},
				{
					Config:           releaseConfig(cacheDir, chartDir, ns, body(2)),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionUpdate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("status", "deployed"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: resource.ComposeTestCheckFunc(checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"), neverReady),
				},
			},
		}
	})
}

// TestAccHelmRelease_installCRDPolicies: install.crds = "Skip" installs the
// release without the chart's CRD; "CreateReplace" creates the CRD when it is
// missing (with the origin labels), and replaces it when it exists with
// other content (Create would leave it). Each install is a new release: a
// new release_name replaces the resource. The CRD is cluster-scoped and
// outlives the releases, so each run starts by removing it.
// It stays serial (no t.Parallel): its CRD is cluster-scoped with a fixed
// name, and creating and deleting a CRD changes the API discovery that every
// other test reads.
func TestAccHelmRelease_installCRDPolicies(t *testing.T) {
	ns := uniqueNamespace(t, "hr-crdinst")
	cacheDir := t.TempDir()
	const group = "crdinstall.stevedore.dev"
	crdName := "widgets." + group
	chartDir := filepath.Join(t.TempDir(), "crds")
	if err := os.CopyFS(chartDir, os.DirFS(filepath.Join(testenv.ChartsDir(), "crds"))); err != nil {
		t.Fatal(err)
	}
	crd := strings.ReplaceAll(mustRead(t, filepath.Join(testenv.ChartsDir(), "crds", "crds", "widgets.yaml")), "stevedore.dev", group)
	crd = strings.Replace(crd, "    singular: widget\n", "    singular: widget\n    shortNames: [wd]\n", 1)
	if !strings.Contains(crd, "shortNames") {
		t.Fatal("the test CRD has no singular: widget line to add shortNames after")
	}
	// No instance of the CRD among the templates: with Skip, an install of
	// one would fail, which is Helm's business, not the policy's.
	testenv.WriteFiles(t, chartDir, map[string]string{
		"crds/widgets.yaml": crd,
		"templates/widget.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  size: {{ .Values.size | quote }}
`,
	})
	config := func(releaseName, policy string) string {
		return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  release_name = %q
  install {
    crds = %q
  }`, releaseName, policy))
	}
	crdAbsent := func(*terraform.State) error {
		if _, err := getObject(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD %s: %v, want NotFound: install.crds = Skip installed it", crdName, err)
		}
		return nil
	}
	crdIs := func(shortNames ...string) resource.TestCheckFunc {
		return func(*terraform.State) error {
			u, err := getObject(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName)
			if err != nil {
				return fmt.Errorf("CRD %s: %w", crdName, err)
			}
			got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "names", "shortNames")
			if !slices.Equal(got, shortNames) {
				return fmt.Errorf("CRD %s shortNames %v, want %v", crdName, got, shortNames)
			}
			if l := u.GetLabels(); l["stevedore.dev/name"] != "podinfo" || l["stevedore.dev/namespace"] != ns {
				return fmt.Errorf("CRD %s labels %v, want the origin labels", crdName, l)
			}
			return nil
		}
	}
	configMap := func(name string) resource.TestCheckFunc {
		return checkExists(t, true, "v1", "ConfigMap", ns, name)
	}
	t.Cleanup(func() { deleteAndWait(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName) })
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { deleteAndWait(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName) },
				Config:    config("crd-skip", "Skip"),
				Check:     resource.ComposeTestCheckFunc(crdAbsent, configMap("crd-skip"), storedIn(t, ns, "crd-skip", []string{"1:deployed"})),
			},
			{
				// Missing: CreateReplace creates it.
				Config:           config("crd-create", "CreateReplace"),
				ConfigPlanChecks: expectAction(plancheck.ResourceActionDestroyBeforeCreate),
				Check: resource.ComposeTestCheckFunc(crdIs("wd"), configMap("crd-create"),
					storedIn(t, ns, "crd-create", []string{"1:deployed"}), storedIn(t, ns, "crd-skip", nil)),
			},
			{
				// Present with other content: CreateReplace replaces it
				// with the chart's.
				PreConfig: func() {
					u, err := getObject(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crdName)
					if err != nil {
						t.Fatal(err)
					}
					if err := unstructured.SetNestedStringSlice(u.Object, []string{"old"}, "spec", "names", "shortNames"); err != nil {
						t.Fatal(err)
					}
					if err := testClient(t).Update(context.Background(), u, client.FieldOwner("kubectl")); err != nil {
						t.Fatal(err)
					}
					if err := crdIs("old")(nil); err != nil {
						t.Fatal(err)
					}
				},
				Config:           config("crd-replace", "CreateReplace"),
				ConfigPlanChecks: expectAction(plancheck.ResourceActionDestroyBeforeCreate),
				Check:            resource.ComposeTestCheckFunc(crdIs("wd"), configMap("crd-replace"), storedIn(t, ns, "crd-replace", []string{"1:deployed"})),
			},
		},
	})
}

// TestAccHelmRelease_upgradeCleanupOnFail: an upgrade that adds an object and
// then fails (its pods can never become ready) leaves that object in the
// cluster without upgrade.cleanup_on_fail (the control), and deletes it with
// it: only the failed release is left behind. Good values converge after
// each failure.
func TestAccHelmRelease_upgradeCleanupOnFail(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-cleanup")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		testenv.WriteFiles(t, chartDir, map[string]string{"templates/extra.yaml": `{{- if .Values.extra }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  created-by: upgrade
{{- end }}
`})
		config := func(bad, cleanup bool) string {
			sel, timeout := "{}", "10s"
			if bad {
				sel, timeout = noSuchNode, stuckTimeout
			}
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  timeout = %q
  values  = { extra = %t, nodeSelector = %s }
  upgrade {
    cleanup_on_fail = %t
  }`, timeout, bad, sel, cleanup))
		}
		extra := func() bool { return exists(t, "v1", "ConfigMap", ns, "podinfo-extra") }
		revisions := func(want ...string) {
			if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, want) {
				t.Errorf("revisions %v, want %v", got, want)
			}
		}
		failed := regexp.MustCompile(`(?s)upgrade\s+failed.*RetriesExceeded`)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config(false, false),
					Check:  checkExists(t, false, "v1", "ConfigMap", ns, "podinfo-extra"),
				},
				{Config: config(true, false), ExpectError: failed},
				{
					PreConfig: func() {
						revisions("1:deployed", "2:failed")
						if !extra() {
							t.Error("without cleanup_on_fail the failed upgrade's ConfigMap is gone: the test proves nothing")
						}
					},
					Config: config(false, true),
					Check: resource.ComposeTestCheckFunc(checkExists(t, false, "v1", "ConfigMap", ns, "podinfo-extra"),
						checkRevisions(t, ns, "podinfo", "1:superseded", "2:failed", "3:deployed")),
				},
				{Config: config(true, true), ExpectError: failed},
				{
					PreConfig: func() {
						revisions("1:superseded", "2:failed", "3:deployed", "4:failed")
						if extra() {
							t.Error("with cleanup_on_fail the ConfigMap the failed upgrade created is still there")
						}
					},
					Config: config(false, true),
					Check:  checkRevisions(t, ns, "podinfo", "1:superseded", "2:failed", "3:superseded", "4:failed", "5:deployed"),
				},
			},
		}
	})
}

// TestAccHelmRelease_upgradePreserveValues: upgrade.preserve_values is
// Helm's --reuse-values (helm-controller maps it so): the values of the
// previous release stay where the new configuration does not set them, and
// the new ones win. The plan's changes already show it (only the ConfigMap
// changes). Without it the values are the configuration's alone: a value
// that is no longer set goes back to the chart's default.
func TestAccHelmRelease_upgradePreserveValues(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-preserve")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(values string, preserve bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  values = %s
  upgrade {
    preserve_values = %t
  }`, values, preserve))
		}
		cluster := func(replicas int64, greeting string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				n, err := deploymentReplicas(t, ns, "podinfo")
				if err != nil {
					return err
				}
				if n != replicas {
					return fmt.Errorf("deployment replicas %d, want %d", n, replicas)
				}
				return checkObjectField(t, "v1", "ConfigMap", ns, "podinfo", greeting, "data", "greeting")(nil)
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config(`{ replicaCount = 2, config = { greeting = "first" } }`, false),
					Check:  cluster(2, "first"),
				},
				{
					Config: config(`{ config = { greeting = "second" } }`, true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							knownvalue.ObjectPartial(map[string]knownvalue.Check{
								"id": knownvalue.StringExact(ns + "_podinfo__ConfigMap"), "type": knownvalue.StringExact("update"),
							}),
						})),
					}},
					Check: resource.ComposeTestCheckFunc(cluster(2, "second"), checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed")),
				},
				{
					Config: config(`{ config = { greeting = "third" } }`, false),
					Check:  resource.ComposeTestCheckFunc(cluster(1, "third"), checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed")),
				},
			},
		}
	})
}

// TestAccHelmRelease_upgradeRemediationUninstall: an upgrade that fails
// (Helm's wait times out) with upgrade.remediation.strategy = "uninstall" and
// a retry left is remediated by uninstalling the release, history and
// objects, and helm-controller's next action, an install, follows in the
// same apply: storage holds a new revision 1 only, and the Deployment is a
// new object. The install does not wait, so it succeeds with the same
// values.
func TestAccHelmRelease_upgradeRemediationUninstall(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-uninst")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(sel string) string {
			// The upgrade to values no node can run waits out
			// upgrade.timeout (stuckTimeout); the uninstall keeps timeout.
			upgradeTimeout := ""
			if sel == noSuchNode {
				upgradeTimeout = fmt.Sprintf("timeout = %q", stuckTimeout)
			}
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  timeout = "10s"
  values  = { nodeSelector = %s }
  install {
    disable_wait = true
  }
  upgrade {
    %s
    remediation {
      retries  = 1
      strategy = "uninstall"
    }
  }`, sel, upgradeTimeout))
		}
		var firstUID string
		deploymentUID := func() string {
			u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
			if err != nil {
				t.Fatal(err)
			}
			return string(u.GetUID())
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config("{}"),
					Check: func(*terraform.State) error {
						firstUID = deploymentUID()
						return checkRevisions(t, ns, "podinfo", "1:deployed")(nil)
					},
				},
				{
					Config:           config(noSuchNode),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionUpdate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("status", "deployed"),
						expectBookField(rec, ns+"/podinfo", "last_attempted_release_action", "install"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 1),
						expectBookField(rec, ns+"/podinfo", "history", 1),
					},
					Check: func(*terraform.State) error {
						// Uninstalled (the failed revision 2 and revision 1 are
						// gone), then installed anew.
						if err := checkRevisions(t, ns, "podinfo", "1:deployed")(nil); err != nil {
							return err
						}
						if uid := deploymentUID(); uid == firstUID {
							return fmt.Errorf("the Deployment is the one of the first install (uid %s): the release was not uninstalled", uid)
						}
						sel, err := objectField(t, "apps/v1", "Deployment", ns, "podinfo", "spec", "template", "spec", "nodeSelector", "stevedore.dev/no-such-node")
						if err != nil || sel != "true" {
							return fmt.Errorf("the reinstalled Deployment does not have the new values: %q %v", sel, err)
						}
						return nil
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_testFiltersAndIgnoreFailures: a chart with two test
// hooks, one of which always fails. test.filters decide which run: a named
// filter runs only that hook, an exclude filter drops its hook; the other
// hook's Pod is never created. With test.ignore_failures both run, the
// failing one fails, and the release is neither failed nor remediated (a
// retry and remediation would otherwise roll it back): the apply succeeds and
// storage has no rollback.
func TestAccHelmRelease_testFiltersAndIgnoreFailures(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-testfilt")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		testenv.WriteFiles(t, chartDir, map[string]string{"templates/tests/test-other.yaml": failingTestHook})
		config := func(replicas int, test string) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  values = { replicaCount = %d }
  test {
    enable = true
    %s
  }
  upgrade {
    remediation {
      retries = 1
    }
  }`, replicas, test))
		}
		hook := func(name, phase string) string { return name + "=" + phase }
		hooks := func(want ...string) statecheck.StateCheck { return expectTestHooks(rec, ns+"/podinfo", want...) }
		podPhase := func(name, phase string) resource.TestCheckFunc {
			return checkObjectField(t, "v1", "Pod", ns, name, phase, "status", "phase")
		}
		otherNeverRan := checkExists(t, false, "v1", "Pod", ns, "podinfo-test-other")
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					// Helm leaves test Pods behind on uninstall: the other CLI's
					// run left them.
					PreConfig: func() {
						deleteAndWait(t, "v1", "Pod", ns, "podinfo-test")
						deleteAndWait(t, "v1", "Pod", ns, "podinfo-test-other")
					},
					Config:            config(1, "filters {\n      name = \"podinfo-test\"\n    }"),
					ConfigStateChecks: []statecheck.StateCheck{expectStr("status", "deployed"), hooks(hook("podinfo-test", "Succeeded"))},
					Check:             resource.ComposeTestCheckFunc(podPhase("podinfo-test", "Succeeded"), otherNeverRan),
				},
				{
					Config: config(2, "filters {\n      name    = \"podinfo-test-other\"\n      exclude = true\n    }"),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("status", "deployed"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
						hooks(hook("podinfo-test", "Succeeded")),
					},
					Check: resource.ComposeTestCheckFunc(podPhase("podinfo-test", "Succeeded"), otherNeverRan),
				},
				{
					Config: config(3, "ignore_failures = true"),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("status", "deployed"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(3)),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 0),
						hooks(hook("podinfo-test", "Succeeded"), hook("podinfo-test-other", "Failed")),
					},
					Check: resource.ComposeTestCheckFunc(
						podPhase("podinfo-test", "Succeeded"),
						podPhase("podinfo-test-other", "Failed"),
						checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed"),
					),
				},
			},
		}
	})
}

// TestAccHelmRelease_maxHistoryPrunes: with max_history = 2, after an install
// and four upgrades (N+3 revisions) Helm's storage holds the two newest
// revisions only: two release Secrets in the storage namespace; so does the
// state's history.
func TestAccHelmRelease_maxHistoryPrunes(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-maxhist")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		const max = 2
		config := func(i int) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  max_history = %d
  values      = { config = { greeting = "v%d" } }`, max, i))
		}
		secrets := func(versions ...int) resource.TestCheckFunc {
			return func(*terraform.State) error {
				var want []string
				for _, v := range versions {
					want = append(want, fmt.Sprintf("sh.helm.release.v1.podinfo.v%d", v))
				}
				if got := releaseSecrets(t, ns, "podinfo"); !slices.Equal(got, want) {
					return fmt.Errorf("release Secrets in %s: %v, want %v", ns, got, want)
				}
				return nil
			}
		}
		steps := []resource.TestStep{}
		for i := 1; i <= 5; i++ {
			kept := []int{i}
			if i > 1 {
				kept = []int{i - 1, i}
			}
			steps = append(steps, resource.TestStep{
				Config: config(i),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(int64(i))),
					expectBookField(rec, ns+"/podinfo", "history", len(kept)),
				},
				Check: secrets(kept...),
			})
		}
		steps[4].Check = resource.ComposeTestCheckFunc(steps[4].Check, checkRevisions(t, ns, "podinfo", "4:superseded", "5:deployed"))
		return resource.TestCase{Steps: steps}
	})
}

// TestAccHelmRelease_driftIgnoreTargets: each drift ignore rule applies to
// the objects its target selects, by group, namespace, label selector and
// annotation selector. Four objects each match exactly one rule; all four
// labels the rules ignore are edited on all four objects. Refresh reports,
// for each object, the three labels its rule does not cover, so each
// selector both matches its object and leaves the others alone. Apply
// corrects what was reported and leaves the ignored labels as edited.
func TestAccHelmRelease_driftIgnoreTargets(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns, other := uniqueNamespace(t, "hr-dsel"), uniqueNamespace(t, "hr-dsel-other")
		cacheDir := t.TempDir()
		chartDir := filepath.Join(t.TempDir(), "driftsel")
		testenv.WriteFiles(t, chartDir, map[string]string{
			"Chart.yaml":  "apiVersion: v2\nname: driftsel\nversion: 1.0.0\n",
			"values.yaml": "otherNamespace: default\n",
			"templates/_helpers.tpl": `{{- define "driftsel.labels" -}}
drift-g: "x"
drift-n: "x"
drift-l: "x"
drift-a: "x"
{{- end }}
`,
			"templates/objects.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Release.Name }}-role
  labels:
    {{- include "driftsel.labels" . | nindent 4 }}
rules:
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get"]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-labelled
  labels:
    tier: front
    {{- include "driftsel.labels" . | nindent 4 }}
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-other
  namespace: {{ .Values.otherNamespace }}
  labels:
    {{- include "driftsel.labels" . | nindent 4 }}
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-annotated
  annotations:
    team: red
  labels:
    {{- include "driftsel.labels" . | nindent 4 }}
data:
  k: v
`,
		})
		body := fmt.Sprintf(`
  values = { otherNamespace = %q }
  drift_detection {
    ignore {
      paths = ["/metadata/labels/drift-g"]
      target {
        group = "^rbac\\.authorization\\.k8s\\.io$"
      }
    }
    ignore {
      paths = ["/metadata/labels/drift-n"]
      target {
        namespace = "^%s$"
      }
    }
    ignore {
      paths = ["/metadata/labels/drift-l"]
      target {
        label_selector = "tier=front"
      }
    }
    ignore {
      paths = ["/metadata/labels/drift-a"]
      target {
        annotation_selector = "team=red"
      }
    }
  }`, other, other)
		type object struct{ apiVersion, kind, ns, name, id, ignored string }
		objects := []object{
			{"rbac.authorization.k8s.io/v1", "Role", ns, "podinfo-role", ns + "_podinfo-role_rbac.authorization.k8s.io_Role", "g"},
			{"v1", "ConfigMap", other, "podinfo-other", other + "_podinfo-other__ConfigMap", "n"},
			{"v1", "ConfigMap", ns, "podinfo-labelled", ns + "_podinfo-labelled__ConfigMap", "l"},
			{"v1", "ConfigMap", ns, "podinfo-annotated", ns + "_podinfo-annotated__ConfigMap", "a"},
		}
		keys := []string{"a", "g", "l", "n"}
		wantDrift := map[string][]string{}
		for _, o := range objects {
			for _, k := range keys {
				if k != o.ignored {
					wantDrift[o.id] = append(wantDrift[o.id], fmt.Sprintf(`/metadata/labels/drift-%s="y"->"x"`, k))
				}
			}
		}
		edit := func() {
			patch := []byte(`{"metadata":{"labels":{"drift-g":"y","drift-n":"y","drift-l":"y","drift-a":"y"}}}`)
			for _, o := range objects {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion(o.apiVersion)
				u.SetKind(o.kind)
				u.SetNamespace(o.ns)
				u.SetName(o.name)
				if err := testClient(t).Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", patch), client.FieldOwner("kubectl")); err != nil {
					t.Fatal(err)
				}
			}
		}
		labels := func(edited bool) resource.TestCheckFunc {
			return func(*terraform.State) error {
				for _, o := range objects {
					u, err := getObject(t, o.apiVersion, o.kind, o.ns, o.name)
					if err != nil {
						return err
					}
					for _, k := range keys {
						want := "x"
						if edited && k == o.ignored {
							want = "y"
						}
						if got := u.GetLabels()["drift-"+k]; got != want {
							return fmt.Errorf("%s %s/%s label drift-%s = %q, want %q", o.kind, o.ns, o.name, k, got, want)
						}
					}
				}
				return nil
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:            releaseConfig(cacheDir, chartDir, ns, body),
					ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil))},
					Check:             labels(false),
				},
				{
					PreConfig: edit,
					Config:    releaseConfig(cacheDir, chartDir, ns, body),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						expectPriorDrift(releaseAddr, wantDrift),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil)),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: labels(true),
				},
			},
		}
	})
}

// twoChartsConfig is two artifacts, of the charts in podinfoDir and
// webappDir, and a release in ns of the one named use; body is added to the
// release.
func twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, use, body string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmchart_artifact" "webapp" {
  source_path = %s
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.%s.path
    digest = stevedore_helmchart_artifact.%s.digest
  }
%s
}
`, hcl(podinfoDir), hcl(webappDir), ns, use, use, body)
}

// TestAccHelmRelease_replaceOnChartName: a release switched to a chart of
// another name is replaced, as helm-controller uninstalls and installs it:
// the plan says so, storage holds a new revision 1 of the new chart (not
// revision 2), and the Deployment is a new object labelled with the new
// chart.
func TestAccHelmRelease_replaceOnChartName(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-chartname")
		cacheDir := t.TempDir()
		podinfoDir := chartCopy(t, "1.0.0")
		webappDir := chartCopy(t, "1.0.0")
		chartYAML := filepath.Join(webappDir, "Chart.yaml")
		testenv.WriteFiles(t, webappDir, map[string]string{"Chart.yaml": strings.Replace(mustRead(t, chartYAML), "name: podinfo", "name: webapp", 1)})
		var firstUID string
		deployment := func(chart string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
				if err != nil {
					return err
				}
				if got := u.GetLabels()["helm.sh/chart"]; got != chart {
					return fmt.Errorf("deployment chart label %q, want %q", got, chart)
				}
				if firstUID == "" {
					firstUID = string(u.GetUID())
				} else if string(u.GetUID()) == firstUID {
					return fmt.Errorf("the Deployment is the old release's (uid %s): the release was upgraded, not replaced", firstUID)
				}
				return nil
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: func() { firstUID = "" },
					Config:    twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, "podinfo", ""),
					Check:     resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}), deployment("podinfo-1.0.0")),
				},
				{
					Config:           twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, "webapp", ""),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionDestroyBeforeCreate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("chart_name", "webapp"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}), deployment("webapp-1.0.0")),
				},
			},
		}
	})
}

// TestAccHelmRelease_replaceOnTargetNamespace: a new target_namespace (with
// release_name and storage fixed, so that it is the only change) replaces
// the release: the old objects leave the old target namespace, the new ones
// are in the new one, and storage holds a new revision 1.
func TestAccHelmRelease_replaceOnTargetNamespace(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-target")
		first, second := uniqueNamespace(t, "hr-target-a"), uniqueNamespace(t, "hr-target-b")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(target string) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf("  release_name = \"podinfo\"\n  target_namespace = %q\n", target))
		}
		return resource.TestCase{
			CheckDestroy: storedIn(t, ns, "podinfo", nil, first, second),
			Steps: []resource.TestStep{
				{
					Config: config(first),
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}, first),
						checkExists(t, true, "apps/v1", "Deployment", first, "podinfo")),
				},
				{
					Config:           config(second),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionDestroyBeforeCreate),
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("target_namespace", second),
						expectStr("storage_namespace", ns),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: resource.ComposeTestCheckFunc(
						storedIn(t, ns, "podinfo", []string{"1:deployed"}, first, second),
						checkExists(t, false, "apps/v1", "Deployment", first, "podinfo"),
						checkExists(t, false, "v1", "ConfigMap", first, "podinfo"),
						checkExists(t, true, "apps/v1", "Deployment", second, "podinfo"),
						checkExists(t, true, "v1", "ConfigMap", second, "podinfo"),
					),
				},
			},
		}
	})
}

// TestAccHelmRelease_forceToken: a new force_token upgrades a release that is
// in sync, once (Flux's forceAt): the plan says so, Helm's storage gets a new
// revision with the same values, and the plan after it is empty. Removing the
// token forces nothing.
func TestAccHelmRelease_forceToken(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-force")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(token string) string {
			return releaseConfig(cacheDir, chartDir, ns, token)
		}
		version := func(v int64) statecheck.StateCheck {
			return statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(v))
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:            config(""),
					ConfigStateChecks: []statecheck.StateCheck{version(1)},
					Check:             checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					Config: config(`  force_token = "2026-11-24T08:00:00Z"`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectUnknownValue(releaseAddr, tfjsonpath.New("version")),
					}},
					ConfigStateChecks: []statecheck.StateCheck{version(2), expectStr("status", "deployed")},
					Check:             checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
				{
					// The same token again forces nothing: only a new value does.
					Config:           config(`  force_token = "2026-11-24T08:00:00Z"`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				},
				{
					Config: config(""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{version(2)},
					Check:             checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
			},
		}
	})
}

// failingTestHook is a second Helm test hook, {{ .Release.Name }}-test-other,
// whose Pod the test cluster fails (its stevedore.dev/test-fail label).
const failingTestHook = `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test-other
  labels:
    # The test cluster fails pods with this label.
    stevedore.dev/test-fail: "true"
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
    - name: check
      image: curlimages/curl:8.5.0
      command: ["false"]
`
