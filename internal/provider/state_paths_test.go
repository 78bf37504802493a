package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// statePath is one way that state gets written: the steps that lead to it,
// the last of which takes the path.
type statePath struct {
	name  string
	steps func(t *testing.T, rec *protocolRecord) []resource.TestStep
}

// TestAccProvider_statePathsKeepPlanFidelity is the guard of plan fidelity:
// every path that writes the state of a resource (create, update, import, read,
// drift correction, remediation, partial failure), each run under both CLIs.
// The harness follows every applying step with a plan that must be empty (exit
// code 0 of `plan -detailed-exitcode`), and the protocol record checks every
// apply that succeeded against its plan: a value that the plan knew must come
// back as it was ("Provider produced inconsistent result" otherwise), including
// on the steps that expect an error. A path that fails leaves its state for the
// next step, which must converge in one apply.
//
// Not parallel itself (it shares nothing): its paths, parallel subtests two
// levels down, then run in the serial phase at the start, 4 at a time. Queued
// behind every other parallel test, they were the last to start, and the
// package's run ended with the longest of them alone on the machine.
func TestAccProvider_statePathsKeepPlanFidelity(t *testing.T) {
	const good, bad = "{}", `{ "stevedore.dev/no-such-node" = "true" }`
	release := func(t *testing.T, prefix string) (cfg func(body string) string, ns string) {
		ns = uniqueNamespace(t, prefix)
		cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
		return func(body string) string { return releaseConfig(cacheDir, chartDir, ns, body) }, ns
	}
	deployed := func(version int64) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(version))
	}
	paths := []statePath{
		{"helmchart_artifact/create_and_update", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			dir := chartCopy(t, "1.0.0")
			cfg := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(t.TempDir()))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(dir))
			return []resource.TestStep{
				{PreConfig: func() { setChartVersion(t, dir, "1.0.0") }, Config: cfg, Check: artifactFileMatches(artifactAddr)},
				{
					PreConfig: func() { setChartVersion(t, dir, "1.1.0") },
					Config:    cfg,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
					},
					Check: artifactFileMatches(artifactAddr),
				},
			}
		}},
		{"helmrelease/create", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			cfg, ns := release(t, "sp-create")
			return []resource.TestStep{{Config: cfg(`values = { replicaCount = 1 }`), ConfigStateChecks: []statecheck.StateCheck{deployed(1)},
				Check: checkRevisions(t, ns, "podinfo", "1:deployed")}}
		}},
		{"helmrelease/update", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			cfg, ns := release(t, "sp-update")
			return []resource.TestStep{
				{Config: cfg(`values = { replicaCount = 1 }`)},
				{
					Config: cfg(`values = { replicaCount = 2 }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{deployed(2)},
					Check:             checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
			}
		}},
		{"helmrelease/import_with_its_artifact", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			// The release and the artifact its chart comes from are made in
			// the same apply as the import: chart_digest is unknown at plan.
			ns := uniqueNamespace(t, "sp-import")
			chartDir := chartCopy(t, "1.0.0")
			return []resource.TestStep{{
				// Installed for each CLI: the one before destroyed its own.
				PreConfig: func() {
					if err := testenv.HelmInstall(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", chartDir, map[string]any{"replicaCount": 2}); err != nil {
						t.Fatal(err)
					}
				},
				Config: releaseConfig(t.TempDir(), chartDir, ns, `values = { replicaCount = 2 }`) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.podinfo
  id = "%s/podinfo"
}
`, ns),
				ConfigStateChecks: []statecheck.StateCheck{deployed(1)},
				Check:             checkRevisions(t, ns, "podinfo", "1:deployed"),
			}}
		}},
		{"helmrelease/read_drift", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			cfg, ns := release(t, "sp-read")
			return []resource.TestStep{
				{Config: cfg(`values = { replicaCount = 1 }`)},
				{
					PreConfig:          func() { scaleDeployment(t, ns, "podinfo", 3) },
					RefreshState:       true,
					ExpectNonEmptyPlan: true,
					Check:              resource.TestCheckResourceAttr(releaseAddr, "drift.0.changes.0.path", "/spec/replicas"),
				},
			}
		}},
		{"helmrelease/drift_correction", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			cfg, ns := release(t, "sp-correct")
			return []resource.TestStep{
				{Config: cfg(`values = { replicaCount = 1 }`)},
				{
					PreConfig: func() { scaleDeployment(t, ns, "podinfo", 3) },
					Config:    cfg(`values = { replicaCount = 1 }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectPriorDrift(releaseAddr, map[string][]string{ns + "_podinfo_apps_Deployment": {"/spec/replicas=3->1"}}),
					}},
					ConfigStateChecks: []statecheck.StateCheck{deployed(1),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("drift"), knownvalue.ListExact(nil))},
					Check: checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
			}
		}},
		{"helmrelease/remediation", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			// A failed upgrade is rolled back (retries = 1: one more
			// upgrade, rolled back again); the state records it, and
			// reverting the values converges in one apply.
			cfg, ns := release(t, "sp-remed")
			// The bad upgrades wait out upgrade.timeout (stuckTimeout);
			// the rollbacks to the good values keep timeout.
			body := func(nodeSelector string) string {
				upgradeTimeout := ""
				if nodeSelector == bad {
					upgradeTimeout = fmt.Sprintf("timeout = %q", stuckTimeout)
				}
				return fmt.Sprintf(`
  timeout = "10s"
  values  = { nodeSelector = %s }
  upgrade {
    %s
    remediation {
      retries = 1
    }
  }`, nodeSelector, upgradeTimeout)
			}
			return []resource.TestStep{
				{Config: cfg(body(good))},
				{Config: cfg(body(bad)), ExpectError: regexp.MustCompile(`helmrelease\s+` + ns + `/podinfo:\s+upgrade`)},
				{
					Config: cfg(body(good)),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 2),
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, releaseAttr("status"), knownvalue.StringExact("deployed")),
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 0),
					},
				},
			}
		}},
		{"helmrelease/partial_failure_of_create", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			cfg, _ := release(t, "sp-partial")
			// The bad install waits out its timeout (stuckTimeout).
			body := func(nodeSelector string) string {
				timeout := "10s"
				if nodeSelector == bad {
					timeout = stuckTimeout
				}
				return fmt.Sprintf(`
  timeout = %q
  values  = { nodeSelector = %s }`, timeout, nodeSelector)
			}
			return []resource.TestStep{
				{Config: cfg(body(bad)), ExpectError: regexp.MustCompile(`install`)},
				{
					Config: cfg(body(good)),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectPriorAttr(releaseAddr, "status", "failed"),
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionDestroyBeforeCreate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{deployed(1)},
				},
			}
		}},
		{"resourceset/create_update_prune", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			ns := newPerCLI("sp-rs")
			return []resource.TestStep{
				{Config: statePathSet("a", "b"), ConfigVariables: nsVar(ns), Check: checkSetObjects(t, ns, []string{"a", "b"}, nil)},
				{
					Config:          statePathSet("b", "c"),
					ConfigVariables: nsVar(ns),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(setAddr, plancheck.ResourceActionUpdate),
					}},
					Check: checkSetObjects(t, ns, []string{"b", "c"}, []string{"a"}),
				},
			}
		}},
		{"resourceset/read_drift_and_correct", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			ns := newPerCLI("sp-rsdrift")
			deleteA := func() {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.String(), Name: "a"}}
				if err := testClient(t).Delete(t.Context(), cm); err != nil {
					t.Fatal(err)
				}
			}
			return []resource.TestStep{
				{Config: statePathSet("a"), ConfigVariables: nsVar(ns)},
				{PreConfig: deleteA, RefreshState: true, ExpectNonEmptyPlan: true,
					Check: resource.TestCheckResourceAttr(setAddr, "drift.0.type", "create")},
				{Config: statePathSet("a"), ConfigVariables: nsVar(ns), Check: checkSetObjects(t, ns, []string{"a"}, nil)},
			}
		}},
		{"resourceset/partial_failure", func(t *testing.T, rec *protocolRecord) []resource.TestStep {
			ns := newPerCLI("sp-rspf")
			return []resource.TestStep{
				{Config: statePathSet("a", "Bad_Name"), ConfigVariables: nsVar(ns), ExpectError: wrapped(`Resource set apply failed`)},
				{Config: statePathSet("a", "b"), ConfigVariables: nsVar(ns), Check: checkSetObjects(t, ns, []string{"a", "b"}, nil)},
			}
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
				steps := p.steps(t, rec)
				want := 0
				for _, s := range steps {
					if !s.PlanOnly && !s.RefreshState && s.ExpectError == nil {
						want++
					}
				}
				last := &steps[len(steps)-1]
				checks := []resource.TestCheckFunc{func(*terraform.State) error {
					if got := rec.appliesSeen(); got < want {
						return fmt.Errorf("the record saw %d successful applies, the steps made at least %d: the check of each against its plan did not run", got, want)
					}
					return nil
				}}
				if last.Check != nil {
					checks = append(checks, last.Check)
				}
				last.Check = resource.ComposeTestCheckFunc(checks...)
				return resource.TestCase{Steps: steps}
			})
		})
	}
}

const setAddr = "stevedore_resourceset.paths"

// nsVar sets the variable ns of statePathSet.
func nsVar(ns perCLI) config.Variables { return config.Variables{"ns": ns} }

// statePathSet is a set of a Namespace (the variable ns) and
// one ConfigMap per name in it.
func statePathSet(names ...string) string {
	objs := ""
	for _, n := range names {
		objs += fmt.Sprintf(`
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = %q, namespace = var.ns }, data = { name = %q } },`, n, n)
	}
	return providerBlock("") + fmt.Sprintf(`
variable "ns" { type = string }

resource "stevedore_resourceset" "paths" {
  name      = "paths"
  namespace = "default"
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns } },%s
  ]
}
`, objs)
}

// checkSetObjects checks that the ConfigMaps named present exist in ns and
// those named absent do not.
func checkSetObjects(t *testing.T, ns perCLI, present, absent []string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, n := range present {
			if !exists(t, "v1", "ConfigMap", ns.String(), n) {
				return fmt.Errorf("ConfigMap %s/%s missing", ns, n)
			}
		}
		for _, n := range absent {
			if exists(t, "v1", "ConfigMap", ns.String(), n) {
				return fmt.Errorf("ConfigMap %s/%s should be gone", ns, n)
			}
		}
		return nil
	}
}
