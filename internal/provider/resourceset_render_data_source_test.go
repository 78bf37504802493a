package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

const renderAddr = "data.stevedore_resourceset_render.r"

// renderSetAttributes are the attributes of a set both the data source and
// the resource take: inputs from stevedore_resourceset_inputs, steps with
// resources and resources_template, a CRD and its kind, objects of every
// scope, common metadata.
func renderSetAttributes(ns string) string {
	return fmt.Sprintf(`
  name      = "render"
  namespace = %[1]q
  inputs    = concat(data.stevedore_resourceset_inputs.static.inputs, [{ id = "2", tenant = "b" }])
  common_metadata {
    labels = { team = "x" }
  }
  steps = [
    {
      name = "base"
      resources = [
        {
          apiVersion = "apiextensions.k8s.io/v1"
          kind       = "CustomResourceDefinition"
          metadata   = { name = "gadgets.%[1]s.render.stevedore.dev" }
          spec = {
            group = "%[1]s.render.stevedore.dev"
            scope = "Namespaced"
            names = { kind = "Gadget", plural = "gadgets", singular = "gadget", listKind = "GadgetList" }
            versions = [{
              name = "v1", served = true, storage = true
              schema = { openAPIV3Schema = { type = "object", "x-kubernetes-preserve-unknown-fields" = true } }
            }]
          }
        },
        {
          apiVersion = "rbac.authorization.k8s.io/v1"
          kind       = "ClusterRole"
          metadata   = { name = "render-<< inputs.tenant >>-%[1]s" }
          rules      = []
        },
      ]
    },
    {
      name               = "apps"
      resources_template = <<-EOT
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: cm-<< inputs.tenant >>}
        data: {id: << inputs.id | quote >>}
        ---
        apiVersion: %[1]s.render.stevedore.dev/v1
        kind: Gadget
        metadata: {name: g-<< inputs.tenant >>}
        ---
        apiVersion: v1
        kind: Secret
        metadata: {name: s-<< inputs.tenant >>}
        stringData: {token: t-<< inputs.tenant >>}
      EOT
    },
  ]
`, ns)
}

const staticInputs = `
data "stevedore_resourceset_inputs" "static" {
  type           = "Static"
  default_values = { tenant = "a" }
}
`

// TestAccResourceSetRender renders a set with a provider that has no
// kubernetes block: the objects, the inventory and the manifests a plan of
// the resource shows.
func TestAccResourceSetRender(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		obj := func(apiVersion, kind, namespace, name, manifest string) knownvalue.Check {
			return knownvalue.ObjectExact(map[string]knownvalue.Check{
				"api_version": knownvalue.StringExact(apiVersion), "kind": knownvalue.StringExact(kind),
				"namespace": knownvalue.StringExact(namespace), "name": knownvalue.StringExact(name),
				"manifest": knownvalue.StringRegexp(regexp.MustCompile(manifest)),
			})
		}
		entry := func(id, v, step string) knownvalue.Check {
			return knownvalue.ObjectExact(map[string]knownvalue.Check{
				"id": knownvalue.StringExact(id), "v": knownvalue.StringExact(v), "step": knownvalue.StringExact(step),
			})
		}
		owner := `(?s)stevedore\.dev/resourceset-name: render\n.*stevedore\.dev/resourceset-namespace: apps\n.*team: x`
		set := staticInputs + `
data "stevedore_resourceset_render" "r" {` + renderSetAttributes("apps") + `}
`
		checks := []statecheck.StateCheck{
			statecheck.ExpectKnownValue(renderAddr, tfjsonpath.New("objects"), knownvalue.ListExact([]knownvalue.Check{
				obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "gadgets.apps.render.stevedore.dev", owner),
				obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "render-a-apps", owner),
				obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "render-b-apps", owner),
				obj("v1", "ConfigMap", "apps", "cm-a", `(?s)id: "1".*namespace: apps`),
				obj("apps.render.stevedore.dev/v1", "Gadget", "apps", "g-a", owner),
				obj("v1", "Secret", "apps", "s-a", `token: t-a`),
				obj("v1", "ConfigMap", "apps", "cm-b", `id: "2"`),
				obj("apps.render.stevedore.dev/v1", "Gadget", "apps", "g-b", owner),
				obj("v1", "Secret", "apps", "s-b", `token: t-b`),
			})),
			statecheck.ExpectKnownValue(renderAddr, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
				entry("_gadgets.apps.render.stevedore.dev_apiextensions.k8s.io_CustomResourceDefinition", "v1", "base"),
				entry("_render-a-apps_rbac.authorization.k8s.io_ClusterRole", "v1", "base"),
				entry("_render-b-apps_rbac.authorization.k8s.io_ClusterRole", "v1", "base"),
				entry("apps_cm-a__ConfigMap", "v1", "apps"),
				entry("apps_cm-b__ConfigMap", "v1", "apps"),
				entry("apps_g-a_apps.render.stevedore.dev_Gadget", "v1", "apps"),
				entry("apps_g-b_apps.render.stevedore.dev_Gadget", "v1", "apps"),
				entry("apps_s-a__Secret", "v1", "apps"),
				entry("apps_s-b__Secret", "v1", "apps"),
			})),
			statecheck.ExpectKnownValue(renderAddr, tfjsonpath.New("manifests"),
				knownvalue.StringRegexp(regexp.MustCompile(`(?s)kind: Secret.*stringData:\n  token: '\*\*\*'`))),
		}
		return resource.TestCase{Steps: []resource.TestStep{
			{Config: `provider "stevedore" {}` + set, ConfigStateChecks: checks},
			{
				// A cluster that does not exist: never contacted.
				Config: `
provider "stevedore" {
  kubernetes {
    host  = "https://127.0.0.1:1"
    token = "none"
  }
}` + set,
				ConfigStateChecks: checks,
			},
		}}
	})
}

// TestAccResourceSetRender_kinds renders kinds it knows only from
// api_resources, and refuses one it does not know, naming it.
func TestAccResourceSetRender_kinds(t *testing.T) {
	t.Parallel()
	renderAccTest(t, func(t *testing.T) resource.TestCase {
		config := func(apiResources string) string {
			return `
provider "stevedore" {}
data "stevedore_resourceset_render" "r" {
  name      = "flux"
  namespace = "apps"
  resources = [
    { apiVersion = "helm.toolkit.fluxcd.io/v2", kind = "HelmRelease", metadata = { name = "web" }, spec = { interval = "1h" } },
    { apiVersion = "example.com/v1", kind = "Cluster", metadata = { name = "big", namespace = "apps" } },
  ]
  ` + apiResources + `
}
`
		}
		return resource.TestCase{Steps: []resource.TestStep{
			{
				Config:      `provider "stevedore" {}` + "\n" + `data "stevedore_resourceset_render" "r" {` + "\n  name = \"x\"\n  namespace = \"apps\"\n}\n",
				ExpectError: regexp.MustCompile(`Nothing to apply`),
			},
			{Config: config(""), ExpectError: regexp.MustCompile(`(?s)(declared\s+in\s+api_resources.*unknown\s+kind\s+helm\.toolkit\.fluxcd\.io/v2/HelmRelease|unknown\s+kind\s+helm\.toolkit\.fluxcd\.io/v2/HelmRelease.*declared\s+in\s+api_resources)`)},
			{Config: config(`api_resources = [{ api_version = "bad/group/version", kind = "X", namespaced = true }]`),
				ExpectError: regexp.MustCompile(`api_resources\[0\]\.api_version`)},
			{
				Config: config(`api_resources = [
    { api_version = "helm.toolkit.fluxcd.io/v2", kind = "HelmRelease", namespaced = true },
    { api_version = "example.com/v1", kind = "Cluster", namespaced = false },
  ]`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(renderAddr, tfjsonpath.New("inventory"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{"id": knownvalue.StringExact("_big_example.com_Cluster"),
							"v": knownvalue.StringExact("v1"), "step": knownvalue.Null()}),
						knownvalue.ObjectExact(map[string]knownvalue.Check{"id": knownvalue.StringExact("apps_web_helm.toolkit.fluxcd.io_HelmRelease"),
							"v": knownvalue.StringExact("v2"), "step": knownvalue.Null()}),
					})),
				},
			},
		}}
	})
}

// TestAccResourceSetRender_isResourcePlan renders the same set through the
// data source and through stevedore_resourceset on the test cluster: the
// resource's planned inventory (but `adopted`, which only the cluster knows)
// and manifests are the data source's.
func TestAccResourceSetRender_isResourcePlan(t *testing.T) {
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "render")
		config := providerBlock("") + staticInputs + `
data "stevedore_resourceset_render" "r" {` + renderSetAttributes(ns) + `}
resource "stevedore_resourceset" "r" {` + renderSetAttributes(ns) + `}
resource "terraform_data" "inventory" {
  input = [for e in stevedore_resourceset.r.inventory : { id = e.id, v = e.v, step = e.step }]
}
`
		return resource.TestCase{Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.CompareValuePairs(renderAddr, tfjsonpath.New("manifests"), "stevedore_resourceset.r", tfjsonpath.New("manifests"), compare.ValuesSame()),
				statecheck.CompareValuePairs(renderAddr, tfjsonpath.New("inventory"), "terraform_data.inventory", tfjsonpath.New("output"), compare.ValuesSame()),
				statecheck.ExpectKnownValue(renderAddr, tfjsonpath.New("inventory"), knownvalue.ListSizeExact(9)),
			},
		}}}
	})
}
