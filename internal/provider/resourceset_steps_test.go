package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// migrationConfig is flux-operator's steps example: a migration Job of the
// version in step 1, the app's Deployment of it in step 2. A failing
// migration cannot be scheduled and its deadline fails it within seconds.
func migrationConfig(ns, version string, fail bool, replicas int) string {
	job := `spec = {
          backoffLimit = 0
          template = {
            spec = {
              restartPolicy = "Never"
              containers    = [{ name = "migrate", image = "ghcr.io/org/my-app:<< inputs.version >>" }]
            }
          }
        }`
	if fail {
		job = `spec = {
          backoffLimit          = 0
          activeDeadlineSeconds = 2
          template = {
            spec = {
              restartPolicy = "Never"
              nodeSelector  = { "stevedore.dev/no-such-node" = "true" }
              containers    = [{ name = "migrate", image = "ghcr.io/org/my-app:<< inputs.version >>" }]
            }
          }
        }`
	}
	return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "app" {
  name      = "app"
  namespace = %q
  inputs    = [{ version = %q }]
  wait      = true
  timeout   = "2m"
  steps = [
    {
      name    = "db-migration"
      timeout = "1m"
      resources = [{
        apiVersion = "batch/v1"
        kind       = "Job"
        metadata   = { name = "db-migration-<< inputs.version >>" }
        %s
      }]
    },
    {
      name               = "app-deploy"
      resources_template = <<-EOT
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: app
        spec:
          replicas: %d
          selector: {matchLabels: {app: app}}
          template:
            metadata: {labels: {app: app}}
            spec: {containers: [{name: app, image: "ghcr.io/org/my-app:<< inputs.version >>"}]}
      EOT
    },
  ]
}
`, ns, version, job, replicas)
}

// inventoryEntry is the check of an inventory entry applied by step.
func inventoryEntry(id, v, step string) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"id": knownvalue.StringExact(id), "v": knownvalue.StringExact(v), "adopted": knownvalue.Bool(false), "step": knownvalue.StringExact(step),
	})
}

// deploymentImage is the image of the app's Deployment in ns, "" when there
// is none.
func deploymentImage(t *testing.T, ns string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app"}, d); err != nil {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func checkImage(t *testing.T, ns, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := deploymentImage(t, ns); got != want {
			return fmt.Errorf("Deployment %s/app image %q, want %q", ns, got, want)
		}
		return nil
	}
}

// TestAccResourceSet_stepsMigration: the migration Job of step 1 completes
// before the Deployment of step 2 is applied, and the plan shows each
// entry's step. A migration that fails stops the apply with an error naming
// its step: the Deployment keeps the old version, nothing is pruned, and the
// state records the failed Job. A fixed version converges and prunes both old
// Jobs; changing only step 2 leaves the completed Job as it is.
func TestAccResourceSet_stepsMigration(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		const rs = "stevedore_resourceset.app"
		ns := uniqueNamespace(t, "rs-steps")
		job := func(v string) string { return ns + "_db-migration-" + v + "_batch_Job" }
		deploy := ns + "_app_apps_Deployment"
		var jobUID types.UID
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if deploymentImage(t, ns) != "" || exists(t, "batch/v1", "Job", ns, "db-migration-v3") {
					return fmt.Errorf("objects of the set left after destroy")
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					Config: migrationConfig(ns, "v1", false, 1),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory").AtSliceIndex(0).AtMapKey("step"), knownvalue.StringExact("app-deploy")),
						plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory").AtSliceIndex(1).AtMapKey("step"), knownvalue.StringExact("db-migration")),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							inventoryEntry(deploy, "v1", "app-deploy"), inventoryEntry(job("v1"), "v1", "db-migration"),
						})),
						statecheck.ExpectKnownValue(rs, tfjsonpath.New("conditions").AtSliceIndex(0).AtMapKey("status"), knownvalue.StringExact("True")),
					},
					Check: resource.ComposeTestCheckFunc(checkImage(t, ns, "ghcr.io/org/my-app:v1"), checkJobComplete(t, ns, "db-migration-v1")),
				},
				{
					Config:      migrationConfig(ns, "v2", true, 1),
					ExpectError: regexp.MustCompile(`(?s)Resource set apply failed.*steps\[0\]:\s+step\s+"db-migration"\s+health\s+check\s+failed`),
				},
				{
					// What the failed apply left: step 2 not applied, nothing
					// pruned, the failed Job in state.
					RefreshState:       true,
					ExpectNonEmptyPlan: true,
					Check: resource.ComposeTestCheckFunc(
						checkImage(t, ns, "ghcr.io/org/my-app:v1"),
						checkExists(t, true, "batch/v1", "Job", ns, "db-migration-v1"),
						checkExists(t, true, "batch/v1", "Job", ns, "db-migration-v2"),
						resource.TestCheckResourceAttr(rs, "inventory.#", "3"),
						resource.TestCheckResourceAttr(rs, "inventory.2.id", job("v2")),
						resource.TestCheckResourceAttr(rs, "inventory.2.step", "db-migration"),
						resource.TestCheckResourceAttr(rs, "conditions.0.reason", "HealthCheckFailed"),
					),
				},
				{
					Config: migrationConfig(ns, "v3", false, 1),
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
					}},
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
							inventoryEntry(deploy, "v1", "app-deploy"), inventoryEntry(job("v3"), "v1", "db-migration"),
						})),
					},
					Check: resource.ComposeTestCheckFunc(
						checkImage(t, ns, "ghcr.io/org/my-app:v3"),
						checkJobComplete(t, ns, "db-migration-v3"),
						checkExists(t, false, "batch/v1", "Job", ns, "db-migration-v1"),
						checkExists(t, false, "batch/v1", "Job", ns, "db-migration-v2"),
						func(*terraform.State) error { jobUID = jobOf(t, ns, "db-migration-v3").UID; return nil },
					),
				},
				{
					// Only step 2 changes: the completed Job is applied again,
					// unchanged, and health-checked as it is.
					Config: migrationConfig(ns, "v3", false, 2),
					Check: func(*terraform.State) error {
						if uid := jobOf(t, ns, "db-migration-v3").UID; uid != jobUID {
							return fmt.Errorf("the completed Job was recreated: uid %s, was %s", uid, jobUID)
						}
						return nil
					},
				},
			},
		}
	})
}

func jobOf(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{}
	if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, j); err != nil {
		t.Fatal(err)
	}
	return j
}

func checkJobComplete(t *testing.T, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, c := range jobOf(t, ns, name).Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == "True" {
				return nil
			}
		}
		return fmt.Errorf("Job %s/%s has not completed", ns, name)
	}
}

// stepsConfig is a set in ns with the given steps (HCL objects) and extra
// attributes.
func stepsConfig(ns, extra string, steps ...string) string {
	return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "bad" {
  name      = "bad"
  namespace = %q
  %s
  steps     = [%s]
}
`, ns, extra, strings.Join(steps, ",\n"))
}

// configMapStep is a step named name with ConfigMap cm.
func configMapStep(name, cm string) string {
	return fmt.Sprintf(`{ name = %q, resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = %q } }] }`, name, cm)
}

// TestAccResourceSet_stepsValidation: what flux-operator's API refuses is a
// plan error naming the attribute: duplicate step names, more than 20 steps,
// steps with resources, and an object two steps define.
func TestAccResourceSet_stepsValidation(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "rs-steps-bad")
		var many []string
		for i := range 21 {
			many = append(many, configMapStep(fmt.Sprintf("s%d", i), fmt.Sprintf("cm%d", i)))
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config:      stepsConfig(ns, "", configMapStep("db", "a"), configMapStep("db", "b")),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)Invalid steps.*steps\[1\]\.name:\s+step\s+"db":\s+name\s+"db"\s+is\s+also\s+the\s+name\s+of\s+steps\[0\]`),
				},
				{
					Config:      stepsConfig(ns, "", many...),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)Invalid steps.*resourceset\s+\S+:\s+steps:\s+21\s+steps,\s+at\s+most\s+20`),
				},
				{
					Config:      stepsConfig(ns, `resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"`, configMapStep("db", "a")),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)Invalid steps.*steps:\s+steps\s+are\s+mutually\s+exclusive\s+with\s+resources\s+and\s+resources_template`),
				},
				{
					Config:   stepsConfig(ns, "", configMapStep("db", "a"), configMapStep("app", "a")),
					PlanOnly: true,
					ExpectError: regexp.MustCompile(`(?s)Cannot plan the resource set.*steps\[1\]:\s+step\s+"app":\s+ConfigMap/` + ns +
						`/a\s+is\s+also\s+defined\s+in\s+step\s+"db"\s+\(steps\[0\]\)`),
				},
				{
					Config:      stepsConfig(ns, "", `{ name = "db", resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "<< inputs.nope >>" } }] }`),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(`(?s)steps\[0\]\.resources\[0\]:\s+step\s+"db":\s+resources\[0\]`),
				},
			},
		}
	})
}

// TestAccResourceSet_stepsExample applies the documented example, in a
// namespace of its own: the Job completes, then the Deployment is applied.
func TestAccResourceSet_stepsExample(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		src, err := os.ReadFile("../../examples/resources/stevedore_resourceset/steps.tf")
		if err != nil {
			t.Fatal(err)
		}
		ns := uniqueNamespace(t, "rs-steps-example")
		config := providerBlock("") + strings.Replace(string(src), `namespace = "apps"`, fmt.Sprintf("namespace = %q", ns), 1)
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: config,
				Check: resource.ComposeTestCheckFunc(
					checkJobComplete(t, ns, "db-migration-v1-0-0"),
					checkExists(t, true, "apps/v1", "Deployment", ns, "my-app"),
					resource.TestCheckResourceAttr("stevedore_resourceset.app", "inventory.0.step", "db-migration"),
				),
			}},
		}
	})
}

// State written before inventory entries had `step` (and the set `steps`)
// reads with null steps, which is what a set without steps plans: no diff,
// and no inconsistent result after the next apply.
func TestResourceSetState_withoutStepsReadsAsPlanned(t *testing.T) {
	ctx := context.Background()
	old := `{
  "id": "default/tenants", "name": "tenants", "namespace": "default", "inputs": null, "resources": null,
  "resources_template": "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n",
  "wait": false, "timeout": "5m", "service_account_name": null, "force": false,
  "common_metadata": null, "dependencies": [],
  "inventory": [{"id": "_a__Namespace", "v": "v1", "adopted": false}],
  "manifests": "", "drift": [], "changes": null, "conditions": []
}`
	sch := resourceSetSchema()
	raw, err := (&tfprotov6.RawState{JSON: []byte(old)}).UnmarshalWithOpts(sch.Type().TerraformType(ctx),
		tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		t.Fatal(err)
	}
	var m resourceSetModel
	if diags := (tfsdk.State{Raw: raw, Schema: sch}).Get(ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	if !m.Steps.IsNull() {
		t.Fatalf("steps %v, want null", m.Steps)
	}
	// The engine maps the objects of a set without steps to the step "".
	planned := plannedInventoryValue([]kube.Entry{{ID: "_a__Namespace", V: "v1"}}, nil, map[string]string{"_a__Namespace": ""})
	if !m.Inventory.Equal(planned) {
		t.Fatalf("state inventory %v, planned %v", m.Inventory, planned)
	}
}
