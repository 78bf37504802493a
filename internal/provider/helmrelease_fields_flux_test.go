package provider

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmRelease_upgradeStrategyRetryOnFailure: an upgrade that fails
// (its pods can never be scheduled) under upgrade.strategy RetryOnFailure,
// with remediation retries that would otherwise roll it back: the apply
// fails naming the strategy, and storage keeps the failed revision with no
// rollback. The next apply of the same configuration plans an update and
// retries with an upgrade (a third revision, failed again, still no
// rollback); good values then converge, with an empty plan after.
func TestAccHelmRelease_upgradeStrategyRetryOnFailure(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-retry")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(bad bool) string {
			sel, timeout := "{}", "10s"
			if bad {
				sel, timeout = noSuchNode, stuckTimeout
			}
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  timeout = %q
  values  = { nodeSelector = %s }
  upgrade {
    strategy {
      name           = "RetryOnFailure"
      retry_interval = "1m"
    }
    remediation {
      retries = 1
    }
  }`, timeout, sel))
		}
		failed := wrapped(`upgrade failed.*upgrade\.strategy is RetryOnFailure: no remediation ran`)
		revisions := func(want ...string) func() {
			return func() {
				if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, want) {
					t.Errorf("revisions %v, want %v", got, want)
				}
			}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: config(false), Check: checkRevisions(t, ns, "podinfo", "1:deployed")},
				{Config: config(true), ExpectError: failed},
				{
					// No rollback ran; the same configuration retries.
					PreConfig:        revisions("1:deployed", "2:failed"),
					Config:           config(true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate)}},
					ExpectError:      failed,
				},
				{
					PreConfig: revisions("1:deployed", "2:failed", "3:failed"),
					Config:    config(false),
					Check:     checkRevisions(t, ns, "podinfo", "1:superseded", "2:failed", "3:failed", "4:deployed"),
					ConfigStateChecks: []statecheck.StateCheck{
						expectBookField(rec, ns+"/podinfo", "upgrade_failures", 0),
						expectBookField(rec, ns+"/podinfo", "failures", 0),
					},
				},
			},
		}
	})
}

// TestAccHelmRelease_installStrategyRetryOnFailure: an install that fails
// under install.strategy RetryOnFailure, with install remediation retries
// that would otherwise uninstall and install again within the apply: the
// apply fails after one attempt, naming the strategy, and the failed
// release stays in storage. Terraform taints the failed create, so the
// next apply, with good values, replaces it (uninstall, install).
func TestAccHelmRelease_installStrategyRetryOnFailure(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-iretry")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(bad bool) string {
			sel, timeout := "{}", "10s"
			if bad {
				sel, timeout = noSuchNode, stuckTimeout
			}
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  timeout = %q
  values  = { nodeSelector = %s }
  install {
    strategy {
      name = "RetryOnFailure"
    }
    remediation {
      retries = 2
    }
  }`, timeout, sel))
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:      config(true),
					ExpectError: wrapped(`install failed.*install\.strategy is RetryOnFailure: no remediation ran.*retry after 5m`),
				},
				{
					PreConfig: func() {
						// One attempt, not uninstalled: the failed release stays.
						if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:failed"}) {
							t.Errorf("revisions %v, want [1:failed]", got)
						}
					},
					Config:           config(false),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionDestroyBeforeCreate)}},
					Check:            checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
			},
		}
	})
}

// gadgetChart writes into chartDir a CRD of a unique group (a CRD is
// cluster-wide: the group is the test's namespace) without a status
// subresource, and a Gadget whose status.phase is the value `phase`, so that
// the chart writes the status a controller would.
func gadgetChart(t *testing.T, chartDir, group string) {
	t.Helper()
	testenv.WriteFiles(t, chartDir, map[string]string{
		"crds/gadgets.yaml": testenv.GadgetCRD(group),
		"templates/gadget.yaml": `{{- if .Values.phase }}
apiVersion: ` + group + `/v1
kind: Gadget
metadata:
  name: {{ .Release.Name }}-gadget
spec: {size: 1}
status:
  phase: {{ .Values.phase }}
{{- end }}
`,
	})
}

// TestAccHelmRelease_healthCheckExprs: a custom resource that kstatus holds
// ready (it has no conditions) is waited for by health_check_exprs under the
// poller: a Gadget whose `failed` expression is true fails the upgrade at
// once, naming it, where the same release without the checks would have
// succeeded; `current` true installs and upgrades.
func TestAccHelmRelease_healthCheckExprs(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-health")
		group := ns + ".stevedore.dev"
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		gadgetChart(t, chartDir, group)
		config := func(phase string) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  timeout = "30s"
  values  = { phase = %q }
  health_check_exprs {
    api_version = "%s/v1"
    kind        = "Gadget"
    current     = "status.phase == 'Ready'"
    failed      = "status.phase == 'Broken'"
  }`, phase, group))
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{Config: config("Ready"), Check: checkRevisions(t, ns, "podinfo", "1:deployed")},
				{
					Config:      config("Broken"),
					ExpectError: wrapped(`upgrade failed.*Gadget`),
				},
				{
					PreConfig: func() {
						if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed", "2:failed"}) {
							t.Errorf("revisions %v, want the Broken upgrade failed", got)
						}
					},
					Config: config("Ready"),
					Check:  checkRevisions(t, ns, "podinfo", "1:superseded", "2:failed", "3:deployed"),
				},
			},
		}
	})
}

// TestAccHelmRelease_takeOwnership: a ConfigMap of the chart that exists
// and belongs to no one fails the plan by default (Helm's ownership check);
// with install.take_ownership the plan warns that it will be taken, naming
// its field manager, and apply takes it (Helm's metadata on it). An object
// of another Helm release is never taken: with upgrade.take_ownership the
// plan fails naming it and its owner, and it keeps its owner.
func TestAccHelmRelease_takeOwnership(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-take")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		testenv.WriteFiles(t, chartDir, map[string]string{"templates/taken.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: loose
data:
  from: chart
{{- if .Values.other }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: others
data:
  from: chart
{{- end }}
{{- if .Values.later }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: later
data:
  from: chart
{{- end }}
`})
		config := func(take, other bool, later ...bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  values = { other = %t, later = %t }
  install {
    take_ownership = %t
  }
  upgrade {
    take_ownership = %t
  }`, other, len(later) > 0, take, take))
		}
		laterCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns}, Data: map[string]string{"from": "outside"}}
		loose := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "loose", Namespace: ns}, Data: map[string]string{"from": "outside"}}
		others := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "others", Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "someone-else", "meta.helm.sh/release-namespace": ns}}}
		annotation := func(name, key string) string {
			v, err := objectField(t, "v1", "ConfigMap", ns, name, "metadata", "annotations", key)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig:   func() { putObject(t, loose); putObject(t, others) },
					Config:      config(false, false),
					ExpectError: wrapped(`ConfigMap.*loose.*exists and cannot be imported`),
				},
				{
					Config: config(true, false),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectWarning(rec, "Objects will be taken", regexp.MustCompile(`(?s)take_ownership: apply takes 1 object.*ConfigMap/`+ns+`/loose \(field managers: [^)]*\(Update\)`)),
					}},
					Check: func(*terraform.State) error {
						if got := annotation("loose", "meta.helm.sh/release-name"); got != "podinfo" {
							return fmt.Errorf("the ConfigMap was not taken: release-name annotation %q", got)
						}
						return checkRevisions(t, ns, "podinfo", "1:deployed")(nil)
					},
				},
				{
					Config:      config(true, true),
					ExpectError: wrapped(`upgrade\.take_ownership takes only objects that belong to no release.*ConfigMap/` + ns + `/others belongs to Helm release ` + ns + `/someone-else`),
				},
				{
					PreConfig: func() {
						if got := annotation("others", "meta.helm.sh/release-name"); got != "someone-else" {
							t.Errorf("the other release's ConfigMap changed owner: %q", got)
						}
					},
					Config: config(true, false),
					Check:  checkRevisions(t, ns, "podinfo", "1:deployed"),
				},
				{
					// An upgrade takes a free object it adds, listed in the plan.
					PreConfig: func() { putObject(t, laterCM) },
					Config:    config(true, false, true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						expectWarning(rec, "Objects will be taken", regexp.MustCompile(`(?s)take_ownership: apply takes 1 object.*ConfigMap/`+ns+`/later \(field managers: `)),
					}},
					Check: func(*terraform.State) error {
						if got := annotation("later", "meta.helm.sh/release-name"); got != "podinfo" {
							return fmt.Errorf("the upgrade did not take the ConfigMap: release-name annotation %q", got)
						}
						return checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed")(nil)
					},
				},
			},
		}
	})
}

// Bad strategies, retry intervals and CEL expressions are validate-time
// errors naming the attribute; nothing is installed.
func TestAccHelmRelease_fluxFieldsBadInput(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-badflux")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		cfg := func(body string) string { return releaseConfig(cacheDir, chartDir, ns, body) }
		nothing := func() {
			if revs := storedRevisions(t, ns, "podinfo"); len(revs) != 0 {
				t.Errorf("bad input installed %v", revs)
			}
		}
		step := func(body, want string) resource.TestStep {
			return resource.TestStep{PreConfig: nothing, Config: cfg(body), PlanOnly: true, ExpectError: wrapped(want)}
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				step(`
  install {
    strategy { name = "RetryForever" }
  }`, `Invalid Attribute Value Match.*install\.strategy\.name.*RetryForever`),
				step(`
  upgrade {
    strategy {
      name           = "RetryOnFailure"
      retry_interval = "five minutes"
    }
  }`, `Invalid duration.*retry_interval = "five minutes".*must be a Go duration`),
				step(`
  upgrade {
    strategy {
      name           = "RemediateOnFailure"
      retry_interval = "5m"
    }
  }`, `upgrade\.strategy\.retry_interval: can only be set when upgrade\.strategy\.name is "RetryOnFailure"`),
				step(`
  health_check_exprs {
    api_version = "example.com/v1"
    kind        = "Widget"
    current     = "status.ready =="
  }`, `health_check_exprs\[0\]\.current: the CEL expression "status\.ready ==" does not parse`),
				step(`
  health_check_exprs {
    api_version = "example.com/v1"
    current     = "true"
  }
  health_check_exprs {
    api_version = "example.com/v2"
    current     = "true"
    failed      = "status.(("
  }`, `health_check_exprs\[1\]\.api_version: a health check for every kind of example.com is given twice`),
			},
		}
	})
}

// TestAccHelmRelease_takeOwnershipWithChartCRDs: a chart whose crds/ installs
// the kind of one of its objects (the Gadget: the cluster does not serve it
// before the install) is checked like any other. Another Helm release's
// ConfigMap in the chart's way fails the plan, naming it and its owner, and
// nothing is written: the ConfigMap keeps its owner and data, no release is
// stored. The unknown kind once made the check give up on every object, and
// the install then took the other release's ConfigMap.
func TestAccHelmRelease_takeOwnershipWithChartCRDs(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-takecrd")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		gadgetChart(t, chartDir, ns+".stevedore.dev")
		testenv.WriteFiles(t, chartDir, map[string]string{
			"templates/others.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: others\ndata:\n  from: chart\n"})
		others := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "others", Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": "someone-else", "meta.helm.sh/release-namespace": ns}},
			Data: map[string]string{"from": "someone-else"}}
		config := releaseConfig(cacheDir, chartDir, ns, "  values = { phase = \"Ready\" }\n  install {\n    take_ownership = true\n  }\n")
		return resource.TestCase{Steps: []resource.TestStep{
			{
				PreConfig:   func() { putObject(t, others) },
				Config:      config,
				PlanOnly:    true,
				ExpectError: wrapped(`install\.take_ownership takes only objects that belong to no release.*ConfigMap/` + ns + `/others belongs to Helm release ` + ns + `/someone-else`),
			},
			{
				PreConfig: func() {
					owner, err := objectField(t, "v1", "ConfigMap", ns, "others", "metadata", "annotations", "meta.helm.sh/release-name")
					from, _ := objectField(t, "v1", "ConfigMap", ns, "others", "data", "from")
					if err != nil || owner != "someone-else" || from != "someone-else" {
						t.Errorf("the other release's ConfigMap was written: release-name %q, data.from %q (%v)", owner, from, err)
					}
					if got := storedRevisions(t, ns, "podinfo"); len(got) > 0 {
						t.Errorf("a refused install stored %v", got)
					}
				},
				Config: providerBlock(""),
			},
		}}
	})
}
