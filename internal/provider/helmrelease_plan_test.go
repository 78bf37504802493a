package provider

import (
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// change is one entry of `changes` or `drift`.
func change(id, typ string, ops ...knownvalue.Check) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"id": knownvalue.StringExact(id), "type": knownvalue.StringExact(typ), "changes": knownvalue.ListExact(ops),
	})
}

func op(typ, path, from, to string) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"op": knownvalue.StringExact(typ), "path": knownvalue.StringExact(path),
		"from": knownvalue.StringExact(from), "to": knownvalue.StringExact(to),
	})
}

// TestAccHelmRelease_planShowsUpgradeChanges: the plan of an upgrade shows,
// per object, what Helm's upgrade will change in the cluster (here the
// Deployment's replicas and the ConfigMap's greeting, nothing else), worked
// out by dry runs that change nothing; apply makes exactly those changes and
// records them; refresh clears them, so the second plan is empty.
func TestAccHelmRelease_planShowsUpgradeChanges(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-changes")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(values string) string { return releaseConfig(cacheDir, chartDir, ns, "  values = "+values) }
		upgraded := knownvalue.ListExact([]knownvalue.Check{
			change(ns+"_podinfo__ConfigMap", "update", op("replace", "/data/greeting", `"hello"`, `"bonjour"`)),
			change(ns+"_podinfo_apps_Deployment", "update", op("replace", "/spec/replicas", "1", "2")),
		})
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config(`{ replicaCount = 1 }`),
					// The chart is the artifact's, made in the same apply: the
					// artifact is built at plan, so the plan of the install
					// shows its objects, and apply records what it planned.
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							change(ns+"_podinfo__ConfigMap", "create"),
							change(ns+"_podinfo__Service", "create"),
							change(ns+"_podinfo_apps_Deployment", "create"),
						})),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.ListExact([]knownvalue.Check{
							change(ns+"_podinfo__ConfigMap", "create"),
							change(ns+"_podinfo__Service", "create"),
							change(ns+"_podinfo_apps_Deployment", "create"),
						})),
					},
				},
				{
					Config: config(`{ replicaCount = 2, config = { greeting = "bonjour" } }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(releaseAddr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), upgraded),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), upgraded),
					},
					Check: checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
				},
				{
					// Refresh clears them; nothing to upgrade: the plan is empty.
					Config: config(`{ replicaCount = 2, config = { greeting = "bonjour" } }`),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectEmptyPlan(),
						plancheck.ExpectKnownValue(releaseAddr, tfjsonpath.New("changes"), knownvalue.Null()),
					}},
				},
			},
		}
	})
}

// TestAccHelmRelease_planRejectsWhatApplyWould: an object the API server
// refuses fails the plan (apply's final plan, when the chart is made in the
// same apply), naming the release and the object, before any Helm action: no
// release is written.
func TestAccHelmRelease_planRejectsWhatApplyWould(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-reject")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		noRelease := func(*terraform.State) error {
			got, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo")
			if len(got) != 0 || (err != nil && !errors.Is(err, driver.ErrReleaseNotFound)) {
				t.Errorf("a release was written: %v, %v", got, err)
			}
			return nil
		}
		return resource.TestCase{
			CheckDestroy: noRelease,
			Steps: []resource.TestStep{
				{
					Config: releaseConfig(cacheDir, chartDir, ns, `  values = { replicaCount = -1 }`),
					ExpectError: regexp.MustCompile(`(?s)Cannot plan the release.*helmrelease\s+` + ns + `/podinfo:\s+install\s+would\s+fail.*` +
						`Deployment.apps\s+"podinfo"\s+is\s+invalid:\s+spec.replicas`),
				},
				{
					PreConfig: func() { _ = noRelease(nil) },
					Config:    releaseConfig(cacheDir, chartDir, ns, `  values = { replicaCount = 1 }`),
					Check: func(*terraform.State) error {
						if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
							t.Errorf("revisions %v", got)
						}
						return nil
					},
				},
				{
					// And an upgrade the API server would refuse fails its plan.
					Config: releaseConfig(cacheDir, chartDir, ns, `  values = { replicaCount = -1 }`),
					ExpectError: regexp.MustCompile(`(?s)Cannot plan the release.*upgrade\s+would\s+fail.*` +
						`Deployment.apps\s+"podinfo"\s+is\s+invalid:\s+spec.replicas`),
				},
			},
		}
	})
}
