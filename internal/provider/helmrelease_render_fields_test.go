package provider

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// helm-controller 1.4-1.6's fields of a release on the cluster, under each
// CLI: install/upgrade.disable_schema_validation, values_from[].literal,
// common_metadata and upgrade.chart_name_change_strategy. Every apply is
// followed by an empty plan (the harness), so none of them drifts.

// releaseConfigMapHas checks that ConfigMap ns/name holds data want.
func releaseConfigMapHas(t *testing.T, ns, name string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := getObject(t, "v1", "ConfigMap", ns, name)
		if err != nil {
			return err
		}
		for k, v := range want {
			if got, _, _ := unstructured.NestedString(u.Object, "data", k); got != v {
				return fmt.Errorf("ConfigMap %s/%s data %s = %q, want %q", ns, name, k, got, v)
			}
		}
		return nil
	}
}

// TestAccHelmRelease_disableSchemaValidation: values the chart's
// values.schema.json refuses fail the plan (nothing is installed); with
// install.disable_schema_validation the plan and the install skip the schema,
// and with upgrade.disable_schema_validation the upgrades do; each switch
// acts on its own action only.
func TestAccHelmRelease_disableSchemaValidation(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-noschema")
		cacheDir := t.TempDir()
		chartDir := filepath.Join(t.TempDir(), "strict")
		testenv.WriteFiles(t, chartDir, map[string]string{
			"Chart.yaml":         "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
			"values.yaml":        "replicaCount: 1\n",
			"values.schema.json": `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}}`,
			"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicaCount | quote }}\n",
		})
		config := func(replicas string, install, upgrade bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`  values = { replicaCount = %q }
  install {
    disable_schema_validation = %t
  }
  upgrade {
    disable_schema_validation = %t
  }
`, replicas, install, upgrade))
		}
		schemaErr := regexp.MustCompile(`values\s+don't\s+meet\s+the\s+specifications\s+of\s+the\s+schema`)
		return resource.TestCase{
			CheckDestroy: storedIn(t, ns, "podinfo", nil),
			Steps: []resource.TestStep{
				{Config: config("three", false, true), ExpectError: schemaErr},
				{
					PreConfig: func() {
						if got := storedRevisions(t, ns, "podinfo"); len(got) > 0 {
							t.Errorf("a plan that failed on the schema installed %v", got)
						}
					},
					Config: config("three", true, false),
					Check:  resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}), releaseConfigMapHas(t, ns, "podinfo", map[string]string{"replicas": "three"})),
				},
				// The upgrade validates: install's switch does not cover it.
				{Config: config("four", true, false), ExpectError: schemaErr},
				{
					Config: config("four", false, true),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							change(ns+"_podinfo__ConfigMap", "update", op("replace", "/data/replicas", `"three"`, `"four"`)),
						})),
					}},
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:superseded", "2:deployed"}),
						releaseConfigMapHas(t, ns, "podinfo", map[string]string{"replicas": "four"})),
				},
			},
		}
	})
}

// TestAccHelmRelease_valuesFromLiteral: without literal, a values_from value
// at a target_path goes through Helm's --set parser, which splits it at its
// commas (the chart gets something else than the ConfigMap holds); with
// literal it is set verbatim, commas, brackets and `=` included, as helm
// --set-literal does: the upgrade puts the ConfigMap's text in the chart's.
func TestAccHelmRelease_valuesFromLiteral(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-literal")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		raw := `{"hosts": ["a", "b"]},mode=strict`
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw-config"}, Data: map[string]string{"settings": raw}}
		if err := testClient(t).Create(context.Background(), cm); err != nil {
			t.Fatal(err)
		}
		config := func(literal string) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`  values = { config = { greeting = "hi" } }
  values_from {
    kind        = "ConfigMap"
    name        = "raw-config"
    values_key  = "settings"
    target_path = "config.settings"
%s  }
`, literal))
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config(""),
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}),
						func(*terraform.State) error {
							u, err := getObject(t, "v1", "ConfigMap", ns, "podinfo")
							if err != nil {
								return err
							}
							if got, _, _ := unstructured.NestedString(u.Object, "data", "settings"); got == raw {
								return fmt.Errorf("without literal the value arrived verbatim: %q", got)
							}
							return nil
						}),
				},
				{
					Config:           config("    literal     = true\n"),
					ConfigPlanChecks: expectAction(plancheck.ResourceActionUpdate),
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:superseded", "2:deployed"}),
						releaseConfigMapHas(t, ns, "podinfo", map[string]string{"settings": raw, "greeting": "hi"})),
				},
			},
		}
	})
}

// TestAccHelmRelease_commonMetadata: common_metadata's labels and annotations
// are on every object of the release, over the chart's, under the origin
// labels; a change shows in the plan as the per-object change the upgrade
// makes, and removing them removes them from the objects. The plan after each
// apply is empty: no drift, no perpetual diff.
func TestAccHelmRelease_commonMetadata(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-common")
		cacheDir := t.TempDir()
		chartDir := filepath.Join(t.TempDir(), "common")
		testenv.WriteFiles(t, chartDir, map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: common\nversion: 0.1.0\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n  labels:\n    team: chart\n" +
				"data:\n  v: one\n",
		})
		config := func(block string) string { return releaseConfig(cacheDir, chartDir, ns, block) }
		meta := func(labels, annotations map[string]string, absent ...string) resource.TestCheckFunc {
			return func(*terraform.State) error {
				u, err := getObject(t, "v1", "ConfigMap", ns, "podinfo-cm")
				if err != nil {
					return err
				}
				for k, v := range labels {
					if got := u.GetLabels()[k]; got != v {
						return fmt.Errorf("label %s = %q, want %q (labels %v)", k, got, v, u.GetLabels())
					}
				}
				for k, v := range annotations {
					if got := u.GetAnnotations()[k]; got != v {
						return fmt.Errorf("annotation %s = %q, want %q", k, got, v)
					}
				}
				for _, k := range absent {
					_, l := u.GetLabels()[k]
					_, a := u.GetAnnotations()[k]
					if l || a {
						return fmt.Errorf("%s is still on the object: labels %v, annotations %v", k, u.GetLabels(), u.GetAnnotations())
					}
				}
				return nil
			}
		}
		id := ns + "_podinfo-cm__ConfigMap"
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config(`  common_metadata {
    labels      = { team = "platform" }
    annotations = { "example.com/note" = "first" }
  }
`),
					Check: meta(map[string]string{"team": "platform", "stevedore.dev/name": "podinfo", "stevedore.dev/namespace": ns},
						map[string]string{"example.com/note": "first"}),
				},
				{
					Config: config(`  common_metadata {
    labels      = { team = "apps", tier = "web" }
    annotations = { "example.com/note" = "first" }
  }
`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							knownvalue.ObjectExact(map[string]knownvalue.Check{
								"id": knownvalue.StringExact(id), "type": knownvalue.StringExact("update"),
								"changes": knownvalue.SetExact([]knownvalue.Check{
									op("replace", "/metadata/labels/team", `"platform"`, `"apps"`),
									op("add", "/metadata/labels/tier", "", `"web"`),
								}),
							}),
						})),
					}},
					Check: meta(map[string]string{"team": "apps", "tier": "web"}, map[string]string{"example.com/note": "first"}),
				},
				{
					Config: config(""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
					}},
					Check: meta(map[string]string{"team": "chart", "stevedore.dev/name": "podinfo"}, nil, "tier", "example.com/note"),
				},
			},
		}
	})
}

// TestAccHelmRelease_chartNameChangeStrategy: with InPlaceUpdate a release
// switched to a chart of another name is upgraded in place: the plan is an
// update and warns so, storage holds revision 2 of the same release and the
// Deployment is the same object. Switched back with the default (Reinstall),
// the plan replaces it and warns so, as TestAccHelmRelease_replaceOnChartName
// checks in full.
func TestAccHelmRelease_chartNameChangeStrategy(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-cnchange")
		cacheDir := t.TempDir()
		podinfoDir := chartCopy(t, "1.0.0")
		webappDir := chartCopy(t, "1.0.0")
		chartYAML := filepath.Join(webappDir, "Chart.yaml")
		helpers := filepath.Join(webappDir, "templates", "_helpers.tpl")
		testenv.WriteFiles(t, webappDir, map[string]string{
			"Chart.yaml": strings.Replace(mustRead(t, chartYAML), "name: podinfo", "name: webapp", 1),
			// A chart renamed so that it can be upgraded in place keeps its
			// selectors, which are immutable: with the chart's name in them
			// the upgrade fails, at plan already.
			"templates/_helpers.tpl": strings.Replace(mustRead(t, helpers), "app.kubernetes.io/name: {{ .Chart.Name }}", "app.kubernetes.io/name: podinfo", 1),
		})
		var uid string
		sameDeployment := func(same bool) resource.TestCheckFunc {
			return func(*terraform.State) error {
				u, err := getObject(t, "apps/v1", "Deployment", ns, "podinfo")
				if err != nil {
					return err
				}
				switch {
				case uid == "":
				case same && string(u.GetUID()) != uid:
					return fmt.Errorf("the Deployment was replaced (uid %s, was %s): the release was not upgraded in place", u.GetUID(), uid)
				case !same && string(u.GetUID()) == uid:
					return fmt.Errorf("the Deployment is the old one (uid %s): the release was not reinstalled", uid)
				}
				uid = string(u.GetUID())
				return nil
			}
		}
		inPlace := "  upgrade {\n    chart_name_change_strategy = \"InPlaceUpdate\"\n  }\n"
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					PreConfig: func() { uid = "" },
					Config:    twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, "podinfo", inPlace),
					Check:     resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}), sameDeployment(true)),
				},
				{
					PreConfig: rec.resetWarnings,
					Config:    twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, "webapp", inPlace),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("webapp")),
						expectWarning(rec, "Chart name changes", regexp.MustCompile(
							`^helmrelease `+ns+`/podinfo: the chart's name changes from "podinfo" to "webapp": upgrade\.chart_name_change_strategy is InPlaceUpdate, so the release is upgraded in place`)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("chart_name", "webapp"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(2)),
					},
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:superseded", "2:deployed"}), sameDeployment(true)),
				},
				{
					PreConfig: rec.resetWarnings,
					Config:    twoChartsConfig(cacheDir, podinfoDir, webappDir, ns, "podinfo", ""),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionDestroyBeforeCreate),
						expectWarning(rec, "Chart name changes", regexp.MustCompile(
							`^helmrelease `+ns+`/podinfo: the chart's name changes from "webapp" to "podinfo": upgrade\.chart_name_change_strategy is Reinstall, so the release is uninstalled and installed again`)),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						expectStr("chart_name", "podinfo"),
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("version"), knownvalue.Int64Exact(1)),
					},
					Check: resource.ComposeTestCheckFunc(storedIn(t, ns, "podinfo", []string{"1:deployed"}), sameDeployment(false)),
				},
			},
		}
	})
}

// TestAccHelmRelease_renderFieldsBadInput: an unknown chart name change
// strategy and a common_metadata key that records ownership are refused at
// validation, naming the attribute; nothing is installed.
func TestAccHelmRelease_renderFieldsBadInput(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-badrender")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:      releaseConfig(cacheDir, chartDir, ns, "  upgrade {\n    chart_name_change_strategy = \"Recreate\"\n  }\n"),
					ExpectError: regexp.MustCompile(`(?s)upgrade\.chart_name_change_strategy\s+value\s+must\s+be\s+one\s+of.*Reinstall.*InPlaceUpdate.*Recreate`),
				},
				{
					Config:      releaseConfig(cacheDir, chartDir, ns, "  common_metadata {\n    labels = { \"stevedore.dev/name\" = \"other\" }\n  }\n"),
					ExpectError: regexp.MustCompile(`common_metadata\.labels:\s+"stevedore\.dev/name"\s+records\s+who\s+owns`),
				},
				{
					Config: providerBlock(""),
					Check:  storedIn(t, ns, "podinfo", nil),
				},
			},
		}
	})
}
