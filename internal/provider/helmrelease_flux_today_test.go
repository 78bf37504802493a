package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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

// fluxTodayRelease is the field-by-field translation of this helm-controller
// 1.6 HelmRelease (chart is the HelmChart's spec.chart, podinfo or webapp;
// phase and greeting are the values a step changes):
//
//	apiVersion: helm.toolkit.fluxcd.io/v2
//	kind: HelmRelease
//	metadata:
//	  name: podinfo
//	  namespace: <ns>
//	spec:
//	  interval: 10m
//	  timeout: 30s
//	  chart:
//	    spec:
//	      chart: <chart>                 # chart { path, digest } of a stevedore_helmchart_artifact
//	      version: 1.0.0
//	  commonMetadata:
//	    labels:
//	      team: platform
//	    annotations:
//	      example.com/owner: apps-team
//	  install:
//	    disableSchemaValidation: true
//	    # disableTakeOwnership: false    (Flux's default; stevedore's is the other way round)
//	    strategy:
//	      name: RemediateOnFailure
//	    remediation:
//	      retries: 3
//	  upgrade:
//	    disableSchemaValidation: true
//	    # disableTakeOwnership: false
//	    chartNameChangeStrategy: InPlaceUpdate
//	    strategy:
//	      name: RetryOnFailure
//	      retryInterval: 2m
//	    remediation:
//	      retries: 2
//	  healthCheckExprs:
//	    - apiVersion: <group>/v1
//	      kind: Gadget
//	      current: status.phase == 'Ready'
//	      failed: status.phase == 'Broken'
//	  valuesFrom:
//	    - kind: ConfigMap
//	      name: raw-config
//	      valuesKey: settings
//	      targetPath: config.settings
//	      literal: true
//	  values:
//	    phase: <phase>
//	    config:
//	      greeting: <greeting>
//
// validate is the two disable_schema_validation switches, true in the
// translation (false only in the step that shows the schema refuses the
// values).
func fluxTodayRelease(cacheDir, podinfoDir, webappDir, ns, group, chart, phase, greeting string, validate bool) string {
	return twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, chart, fmt.Sprintf(`
  timeout = "30s"

  common_metadata {
    labels      = { team = "platform" }
    annotations = { "example.com/owner" = "apps-team" }
  }

  install {
    disable_schema_validation = %[1]t
    take_ownership            = true
    strategy {
      name = "RemediateOnFailure"
    }
    remediation {
      retries = 3
    }
  }

  upgrade {
    disable_schema_validation  = %[1]t
    take_ownership             = true
    chart_name_change_strategy = "InPlaceUpdate"
    strategy {
      name           = "RetryOnFailure"
      retry_interval = "2m"
    }
    remediation {
      retries = 2
    }
  }

  health_check_exprs {
    api_version = "%[2]s/v1"
    kind        = "Gadget"
    current     = "status.phase == 'Ready'"
    failed      = "status.phase == 'Broken'"
  }

  values_from {
    kind        = "ConfigMap"
    name        = "raw-config"
    values_key  = "settings"
    target_path = "config.settings"
    literal     = true
  }

  values = {
    phase  = %[3]q
    config = { greeting = %[4]q }
  }
`, !validate, group, phase, greeting))
}

// TestAccHelmRelease_fluxHelmReleaseOfToday: a release translated from a
// HelmRelease of helm-controller 1.6 that uses all of 1.4-1.6's fields at
// once (fluxTodayRelease) behaves as helm-controller documents, in one
// release, under each CLI:
//
//   - the chart's values.schema.json refuses the values (config admits only
//     greeting, and values_from adds config.settings): with the switches off
//     the plan fails; with disable_schema_validation the install and the
//     upgrades skip the schema;
//   - a ConfigMap of the chart exists and belongs to no release: the plan
//     says take_ownership takes it, and the release owns it after apply;
//   - values_from's literal value arrives verbatim (commas, brackets, `=`);
//   - common_metadata is on every object of the release, the taken one and
//     the custom resource included;
//   - health_check_exprs: the Gadget, which kstatus holds ready (it has no
//     conditions), is Ready by its `current` expression; when its `failed`
//     expression is true the upgrade fails at once naming it;
//   - upgrade.chart_name_change_strategy InPlaceUpdate: the chart renamed
//     with a changed value is one new revision of the same release (the
//     plan is an update and warns so), the Deployment the same object;
//   - upgrade.strategy RetryOnFailure: that failed upgrade runs no
//     remediation (the retries would otherwise roll it back): storage keeps
//     the failed revision and no rollback; the next apply upgrades again;
//   - install.strategy RemediateOnFailure with remediation retries: the
//     install succeeds, so no remediation is due (the install's failure path
//     is TestAccHelmRelease_installStrategyRetryOnFailure's).
//
// The harness's empty plan after every apply step shows none of it drifts.
func TestAccHelmRelease_fluxHelmReleaseOfToday(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-fluxtoday")
		group := ns + ".stevedore.dev"
		cacheDir := t.TempDir()

		// The chart: podinfo with a strict schema, a ConfigMap that exists
		// before the release (shared-settings) and a Gadget (gadgetChart);
		// its selector labels do not name the chart, so that a renamed copy
		// (webapp) can upgrade it in place, as
		// TestAccHelmRelease_chartNameChangeStrategy's does.
		podinfoDir := chartCopy(t, "1.0.0")
		gadgetChart(t, podinfoDir, group)
		helpers := filepath.Join(podinfoDir, "templates", "_helpers.tpl")
		testenv.WriteFiles(t, podinfoDir, map[string]string{
			"values.schema.json": `{"type": "object", "properties": {"config": {"type": "object",
  "properties": {"greeting": {"type": "string"}}, "additionalProperties": false}}}`,
			"templates/shared.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared-settings\ndata:\n  from: chart\n",
			"templates/_helpers.tpl": strings.Replace(mustRead(t, helpers),
				"app.kubernetes.io/name: {{ .Chart.Name }}", "app.kubernetes.io/name: podinfo", 1),
		})
		webappDir := filepath.Join(t.TempDir(), "webapp")
		if err := os.CopyFS(webappDir, os.DirFS(podinfoDir)); err != nil {
			t.Fatal(err)
		}
		chartYAML := filepath.Join(webappDir, "Chart.yaml")
		testenv.WriteFiles(t, webappDir, map[string]string{"Chart.yaml": strings.Replace(mustRead(t, chartYAML), "name: podinfo", "name: webapp", 1)})

		raw := `{"hosts": ["a", "b"]},mode=strict`
		putObject(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw-config"}, Data: map[string]string{"settings": raw}})
		shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared-settings"}, Data: map[string]string{"from": "outside"}}

		config := func(chart, phase, greeting string) string {
			return fluxTodayRelease(cacheDir, podinfoDir, webappDir, ns, group, chart, phase, greeting, false)
		}

		// Every object of the release carries common_metadata and belongs
		// to the release.
		objects := [][3]string{
			{"apps/v1", "Deployment", "podinfo"},
			{"v1", "Service", "podinfo"},
			{"v1", "ConfigMap", "podinfo"},
			{"v1", "ConfigMap", "shared-settings"},
			{group + "/v1", "Gadget", "podinfo-gadget"},
		}
		owned := func(*terraform.State) error {
			for _, o := range objects {
				u, err := getObject(t, o[0], o[1], ns, o[2])
				if err != nil {
					return fmt.Errorf("%s %s/%s: %w", o[1], ns, o[2], err)
				}
				if got := u.GetLabels()["team"]; got != "platform" {
					return fmt.Errorf("%s %s: common_metadata label team = %q (labels %v)", o[1], o[2], got, u.GetLabels())
				}
				if got := u.GetAnnotations()["example.com/owner"]; got != "apps-team" {
					return fmt.Errorf("%s %s: common_metadata annotation example.com/owner = %q", o[1], o[2], got)
				}
				if got := u.GetAnnotations()["meta.helm.sh/release-name"]; got != "podinfo" {
					return fmt.Errorf("%s %s: release-name annotation %q: not the release's", o[1], o[2], got)
				}
			}
			return nil
		}
		var uid string
		sameDeployment := func(*terraform.State) error {
			u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
			if err != nil {
				return err
			}
			if uid != "" && string(u.GetUID()) != uid {
				return fmt.Errorf("the Deployment was replaced (uid %s, was %s): the release was not upgraded in place", u.GetUID(), uid)
			}
			uid = string(u.GetUID())
			return nil
		}
		values := func(greeting string) resource.TestCheckFunc {
			return releaseConfigMapHas(t, ns, "podinfo", map[string]string{"settings": raw, "greeting": greeting})
		}
		gadget := func(phase string) resource.TestCheckFunc {
			return checkObjectField(t, group+"/v1", "Gadget", ns, "podinfo-gadget", phase, "status", "phase")
		}

		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					// The schema refuses these values: without the switches
					// the plan fails, nothing is installed or taken.
					PreConfig:   func() { uid = ""; putObject(t, shared) },
					Config:      fluxTodayRelease(cacheDir, podinfoDir, webappDir, ns, group, "podinfo", "Ready", "hello", true),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`values\s+don't\s+meet\s+the\s+specifications\s+of\s+the\s+schema`),
				},
				{
					PreConfig: func() {
						if revs := storedRevisions(t, ns, "podinfo"); len(revs) > 0 {
							t.Errorf("a plan that failed on the schema installed %v", revs)
						}
						rec.resetWarnings()
					},
					Config: config("podinfo", "Ready", "hello"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionCreate),
						expectWarning(rec, "Objects will be taken", regexp.MustCompile(
							`(?s)take_ownership: apply takes 1 object.*ConfigMap/`+ns+`/shared-settings \(field managers: [^)]*\(Update\)`)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("chart_name", "podinfo"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: resource.ComposeTestCheckFunc(
						storedIn(t, ns, "podinfo", []string{"1:deployed"}),
						owned, sameDeployment, values("hello"), gadget("Ready"),
						releaseConfigMapHas(t, ns, "shared-settings", map[string]string{"from": "chart"}),
					),
				},
				{
					// A Flux user's next commit: the chart renamed, a value
					// changed. One new revision, in place, effects held.
					PreConfig: rec.resetWarnings,
					Config:    config("webapp", "Ready", "hi"),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("webapp")),
						expectWarning(rec, "Chart name changes", regexp.MustCompile(
							`^helmrelease `+ns+`/podinfo: the chart's name changes from "podinfo" to "webapp": upgrade\.chart_name_change_strategy is InPlaceUpdate, so the release is upgraded in place`)),
						// Already the release's: nothing left to take.
						expectNoWarning(rec, "Objects will be taken"),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("chart_name", "webapp"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: resource.ComposeTestCheckFunc(
						storedIn(t, ns, "podinfo", []string{"1:superseded", "2:deployed"}),
						owned, sameDeployment, values("hi"), gadget("Ready"),
						checkObjectField(t, "apps/v1", "Deployment", ns, "podinfo", "webapp-1.0.0", "metadata", "labels", "helm.sh/chart"),
					),
				},
				{
					// The Gadget's failed expression is true: the upgrade
					// fails at once, and RetryOnFailure runs no rollback.
					Config:      config("webapp", "Broken", "hi"),
					ExpectError: wrapped(`upgrade failed.*Gadget.*upgrade\.strategy is RetryOnFailure: no remediation ran`),
				},
				{
					PreConfig: func() {
						if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:deployed", "3:failed"}) {
							t.Errorf("revisions %v, want the Broken upgrade failed and not rolled back", got)
						}
					},
					Config:           config("webapp", "Ready", "hi"),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionUpdate),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(4)),
					},
					Check: resource.ComposeTestCheckFunc(
						storedIn(t, ns, "podinfo", []string{"1:superseded", "2:superseded", "3:failed", "4:deployed"}),
						owned, sameDeployment, values("hi"), gadget("Ready"),
					),
				},
			},
		}
	})
}
