package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccResourceSet_planShowsChanges: the plan of a changed set shows, per
// object, what the apply creates and which fields it changes in the cluster
// (dry runs, nothing changed); an object the API server refuses fails the
// plan, naming it, before anything is applied; after a refresh the plan of
// an unchanged set is empty.
func TestAccResourceSet_planShowsChanges(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "rs-changes")
		config := func(greeting string, replicas int) string {
			return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "set" {
  name      = "changes"
  namespace = %q
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: greeting
    data:
      greeting: %q
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: web
    spec:
      replicas: %d
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: ghcr.io/stefanprodan/podinfo:6.0.0}]}
  EOT
}
`, ns, greeting, replicas)
		}
		const addr = "stevedore_resourceset.set"
		created := knownvalue.ListExact([]knownvalue.Check{
			change(ns+"_greeting__ConfigMap", "create"),
			change(ns+"_web_apps_Deployment", "create"),
		})
		updated := knownvalue.ListExact([]knownvalue.Check{
			change(ns+"_greeting__ConfigMap", "update", op("replace", "/data/greeting", `"hello"`, `"bonjour"`)),
		})
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: config("hello", 1),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("changes"), created),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(addr, tfjsonpath.New("changes"), created),
					},
				},
				{
					Config: config("bonjour", 1),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("changes"), updated),
					}},
					Check: checkConfigMapValue(t, ns, "greeting", "greeting", "bonjour"),
				},
				{
					Config:      config("bonjour", -1),
					ExpectError: regexp.MustCompile(`(?s)Cannot plan the resource set.*Deployment/` + ns + `/web:\s+the\s+API\s+server\s+refuses\s+it.*spec.replicas`),
				},
				{
					Config: config("bonjour", 1),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectEmptyPlan(),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("changes"), knownvalue.Null()),
					}},
				},
			},
		}
	})
}

// checkConfigMapValue checks data[key] of ConfigMap ns/name in the cluster.
func checkConfigMapValue(t *testing.T, ns, name, key, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cm := &corev1.ConfigMap{}
		if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return err
		}
		if got := cm.Data[key]; got != want {
			return fmt.Errorf("ConfigMap %s/%s data[%s] = %q, want %q", ns, name, key, got, want)
		}
		return nil
	}
}
