package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func testClient(t *testing.T) client.Client {
	t.Helper()
	c, err := kube.NewFactory(kube.Config{ConfigPaths: []string{testenv.Need(t).Cluster.Kubeconfig}}, "test").Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exists reports whether the object apiVersion/kind ns/name is in the cluster.
func exists(t *testing.T, apiVersion, kind, ns, name string) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := testClient(t).Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func checkExists(t *testing.T, want bool, apiVersion, kind, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if got := exists(t, apiVersion, kind, ns, name); got != want {
			return fmt.Errorf("%s %s/%s exists = %v, want %v", kind, ns, name, got, want)
		}
		return nil
	}
}

// tenantsConfig is the namespace / service account / role binding matrix of
// flux-operator's docs, for the given tenants, plus a shared object every
// tenant renders and an object that must survive pruning.
func tenantsConfig(prefix string, tenants ...string) string {
	var in []string
	for _, t := range tenants {
		in = append(in, fmt.Sprintf(`{ tenant = %q }`, t))
	}
	return providerBlock("") + fmt.Sprintf(`
resource "stevedore_resourceset" "tenants" {
  name      = "tenants"
  namespace = "default"
  inputs    = [%s]
  resources = [
    {
      apiVersion = "v1"
      kind       = "Namespace"
      metadata   = { name = "%s-<< inputs.tenant >>" }
    },
    {
      apiVersion = "v1"
      kind       = "ServiceAccount"
      metadata   = { name = "flux", namespace = "%s-<< inputs.tenant >>" }
    },
    {
      apiVersion = "rbac.authorization.k8s.io/v1"
      kind       = "RoleBinding"
      metadata   = { name = "flux", namespace = "%s-<< inputs.tenant >>" }
      roleRef    = { apiGroup = "rbac.authorization.k8s.io", kind = "ClusterRole", name = "admin" }
      subjects   = [{ kind = "ServiceAccount", name = "flux", namespace = "%s-<< inputs.tenant >>" }]
    },
  ]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: %s-shared
    data:
      first: << inputs.tenant >>
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: %s-keep-<< inputs.tenant >>
      annotations:
        fluxcd.controlplane.io/prune: disabled
  EOT
  common_metadata {
    labels = { "app.kubernetes.io/part-of" = "tenants" }
  }
}
`, strings.Join(in, ", "), prefix, prefix, prefix, prefix, prefix, prefix)
}

// The matrix applies, plans empty, and removing an input prunes exactly its
// objects (the plan shows them leaving the inventory), keeping prune-disabled
// ones in the cluster. Drift (an edited and a deleted object) shows after
// refresh and one apply restores it. Destroy removes the rest.
func TestAccResourceSet_tenantsMatrixPruneAndDrift(t *testing.T) {
	t.Parallel()
	const rs = "stevedore_resourceset.tenants"
	ctx := context.Background()
	accTest(t, resource.TestCase{
		CheckDestroy: func(*terraform.State) error {
			for _, o := range [][4]string{{"v1", "Namespace", "", "tn-a"}, {"v1", "ConfigMap", "default", "tn-shared"}} {
				if exists(t, o[0], o[1], o[2], o[3]) {
					return fmt.Errorf("%s %s still exists after destroy", o[1], o[3])
				}
			}
			var kept corev1.ConfigMap
			if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: "default", Name: "tn-keep-a"}, &kept); err != nil {
				return fmt.Errorf("the prune-disabled ConfigMap must survive destroy: %w", err)
			}
			// The set let go of it: it is nobody's now, so the next run
			// (another instance of the set) adopts it.
			if _, ok := kept.Labels[kube.SetNameLabel]; ok {
				return fmt.Errorf("the prune-disabled ConfigMap keeps the set's labels: %v", kept.Labels)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: tenantsConfig("tn", "a", "b"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListSizeExact(9)),
					statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory").AtSliceIndex(0), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"id": knownvalue.StringExact("_tn-a__Namespace"), "v": knownvalue.StringExact("v1"), "adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
					})),
					statecheck.ExpectKnownValue(rs, tfjsonpath.New("conditions").AtSliceIndex(0).AtMapKey("status"), knownvalue.StringExact("True")),
					statecheck.ExpectKnownValue(rs, tfjsonpath.New("drift"), knownvalue.ListSizeExact(0)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkExists(t, true, "rbac.authorization.k8s.io/v1", "RoleBinding", "tn-b", "flux"),
					func(*terraform.State) error {
						var cm corev1.ConfigMap
						if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: "default", Name: "tn-shared"}, &cm); err != nil {
							return err
						}
						if cm.Data["first"] != "a" || cm.Labels["app.kubernetes.io/part-of"] != "tenants" || cm.Labels["stevedore.dev/resourceset-name"] != "tenants" {
							return fmt.Errorf("shared ConfigMap: data %v labels %v", cm.Data, cm.Labels)
						}
						return nil
					},
				),
			},
			{
				Config: tenantsConfig("tn", "a"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListSizeExact(5)),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkExists(t, false, "v1", "Namespace", "", "tn-b"),
					checkExists(t, false, "v1", "ServiceAccount", "tn-b", "flux"),
					checkExists(t, true, "v1", "ConfigMap", "default", "tn-keep-b"),
					checkExists(t, true, "v1", "ServiceAccount", "tn-a", "flux"),
				),
			},
			{
				// Someone edits the shared ConfigMap and deletes a ServiceAccount.
				PreConfig: func() {
					c := testClient(t)
					var cm corev1.ConfigMap
					if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tn-shared"}, &cm); err != nil {
						t.Fatal(err)
					}
					cm.Data["first"] = "edited"
					if err := c.Update(ctx, &cm, client.FieldOwner("kubectl-edit")); err != nil {
						t.Fatal(err)
					}
					sa := &corev1.ServiceAccount{}
					sa.Namespace, sa.Name = "tn-a", "flux"
					if err := c.Delete(ctx, sa); err != nil {
						t.Fatal(err)
					}
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(rs, "drift.#", "2"),
					resource.TestCheckResourceAttr(rs, "drift.0.id", "default_tn-shared__ConfigMap"),
					resource.TestCheckResourceAttr(rs, "drift.0.type", "update"),
					resource.TestCheckResourceAttr(rs, "drift.0.changes.0.path", "/data/first"),
					resource.TestCheckResourceAttr(rs, "drift.0.changes.0.from", `"edited"`),
					resource.TestCheckResourceAttr(rs, "drift.0.changes.0.to", `"a"`),
					resource.TestCheckResourceAttr(rs, "drift.1.id", "tn-a_flux__ServiceAccount"),
					resource.TestCheckResourceAttr(rs, "drift.1.type", "create"),
				),
			},
			{
				Config: tenantsConfig("tn", "a"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rs, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(rs, tfjsonpath.New("drift"), knownvalue.ListSizeExact(0)),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkExists(t, true, "v1", "ServiceAccount", "tn-a", "flux"),
					resource.TestCheckResourceAttr(rs, "drift.#", "0"),
				),
			},
		},
	})
	// The prune-disabled objects are not the set's any more; clean them up for
	// the next CLI's run.
	for _, name := range []string{"tn-keep-a", "tn-keep-b"} {
		cm := &corev1.ConfigMap{}
		cm.Namespace, cm.Name = "default", name
		_ = client.IgnoreNotFound(testClient(t).Delete(ctx, cm))
	}
}

// wrapped compiles a pattern whose spaces also match the line breaks the CLIs
// put into long diagnostics.
func wrapped(pattern string) *regexp.Regexp {
	return regexp.MustCompile("(?s)" + strings.ReplaceAll(pattern, " ", `\s+`))
}

// Bad input is a diagnostic naming the attribute and the resource or input.
func TestAccResourceSet_badInput(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		cfg := func(body string) string {
			return providerBlock("") + `
resource "stevedore_resourceset" "bad" {
  name      = "bad"
  namespace = "default"
` + body + "\n}\n"
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: cfg(`
  inputs    = [{ a = "x" }, { b = "y" }]
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "c-<< inputs.a >>" } }]`),
					ExpectError: wrapped(`resourceset default/bad: resources\[0\]: with inputs\[1\]:.*map has no entry for key "a"`),
				},
				{
					Config:      cfg(`resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: << .x"`),
					ExpectError: wrapped(`resources_template:.*unclosed action`),
				},
				{
					Config:      cfg(`resources = [{ apiVersion = "v1", metadata = { name = "x" } }]`),
					ExpectError: wrapped(`resources\[0\]:.*has no kind`),
				},
				{
					Config:      cfg(`resources = [{ apiVersion = "example.com/v1", kind = "Nope", metadata = { name = "x" } }]`),
					ExpectError: wrapped(`resourceset default/bad: resources: Nope/x: unknown kind example.com/v1/Nope`),
				},
				{
					Config: cfg(`
  resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
  dependencies {
    api_version = "v1"
    kind        = "Secret"
    name        = "gate"
    ready       = true
    ready_expr  = "data.ready == "
  }`),
					ExpectError: wrapped(`dependencies\[0\]\.ready_expr: invalid CEL expression`),
				},
				{
					Config:      cfg(`inputs = ["not-an-object"]` + "\n" + `resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"`),
					ExpectError: wrapped(`resourceset default/[a-z0-9-]+: inputs\[0\]: must be an object, got a string`),
				},
			},
		}
	})
}

// A CRD and its custom resources in one set, with an input that is unknown
// until apply: the plan says the inventory is unknown (no error), the apply
// creates the CRD first and then the custom resource, and the next plan is
// empty.
// It stays serial (no t.Parallel): its CRD is cluster-scoped with a fixed
// name, and creating and deleting a CRD changes the API discovery that every
// other test reads.
func TestAccResourceSet_crdAndCustomResourceWithUnknownInput(t *testing.T) {
	const rs = "stevedore_resourceset.widgets"
	cfg := providerBlock("") + `
resource "terraform_data" "tenant" {
  input = "blue"
}

resource "stevedore_resourceset" "widgets" {
  name      = "widgets"
  namespace = "default"
  inputs    = [{ color = terraform_data.tenant.output }]
  resources_template = <<-EOT
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: gizmos.acc.stevedore.dev
    spec:
      group: acc.stevedore.dev
      scope: Namespaced
      names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    ---
    apiVersion: acc.stevedore.dev/v1
    kind: Gizmo
    metadata:
      name: gizmo-<< inputs.color >>
    spec:
      color: << inputs.color >>
  EOT
}
`
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(rs, tfjsonpath.New("inventory")),
				plancheck.ExpectUnknownValue(rs, tfjsonpath.New("manifests")),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(rs, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectExact(map[string]knownvalue.Check{
						"id":      knownvalue.StringExact("_gizmos.acc.stevedore.dev_apiextensions.k8s.io_CustomResourceDefinition"),
						"v":       knownvalue.StringExact("v1"),
						"adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
					}),
					knownvalue.ObjectExact(map[string]knownvalue.Check{
						"id":      knownvalue.StringExact("default_gizmo-blue_acc.stevedore.dev_Gizmo"),
						"v":       knownvalue.StringExact("v1"),
						"adopted": knownvalue.Bool(false), "step": knownvalue.Null(),
					}),
				})),
			},
			Check: checkExists(t, true, "acc.stevedore.dev/v1", "Gizmo", "default", "gizmo-blue"),
		}},
	})
}

// A failure part way (the Namespace applied, the ConfigMap rejected) is an
// error with the state saved; fixing the configuration converges in one more
// apply, and destroy removes everything.
func TestAccResourceSet_partialFailureConverges(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := newPerCLI("pf")
		// The ConfigMap's namespace is the set's own, so the plan's dry run
		// cannot validate the ConfigMap: the apply fails after the Namespace.
		cfg := func(name string) string {
			return providerBlock("") + fmt.Sprintf(`
variable "ns" { type = string }

resource "stevedore_resourceset" "pf" {
  name      = "pf"
  namespace = "default"
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns } },
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = %q, namespace = var.ns }, data = { replicas = "2" } },
  ]
}
`, name)
		}
		vars := config.Variables{"ns": ns}
		return resource.TestCase{
			CheckDestroy: func(*terraform.State) error {
				if exists(t, "v1", "ConfigMap", ns.String(), "settings") {
					return fmt.Errorf("ConfigMap %s/settings survived destroy", ns)
				}
				return nil
			},
			Steps: []resource.TestStep{
				{
					Config:          cfg("Settings_Typo"),
					ConfigVariables: vars,
					ExpectError:     wrapped(`Resource set apply failed.*resourceset default/pf: apply:.*ConfigMap/pf-[0-9a-f]+/Settings_Typo`),
				},
				{
					PreConfig: func() {
						if !exists(t, "v1", "Namespace", "", ns.String()) {
							t.Fatal("the Namespace applied before the failure should exist")
						}
					},
					Config:          cfg("settings"),
					ConfigVariables: vars,
					Check: resource.ComposeTestCheckFunc(
						func(*terraform.State) error {
							if !exists(t, "v1", "ConfigMap", ns.String(), "settings") {
								return fmt.Errorf("ConfigMap %s/settings missing", ns)
							}
							return nil
						},
						resource.TestCheckResourceAttr("stevedore_resourceset.pf", "inventory.#", "2"),
					),
				},
			},
		}
	})
}
