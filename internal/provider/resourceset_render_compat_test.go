package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccResourceSet_rendersAsFluxOperator: what flux-operator's builder
// renders, the set renders through the provider: literal inputs name the set
// as their `provider` (an input's own `provider` key is replaced, with a
// warning on the input), a `kind: List` in resources_template is its items,
// and a kustomize Kustomization there is left out, with a warning.
func TestAccResourceSet_rendersAsFluxOperator(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := newPerCLI("rc")
		cfg := providerBlock("") + `
variable "ns" { type = string }

resource "stevedore_resourceset" "compat" {
  name      = "compat"
  namespace = var.ns
  inputs    = [{ tenant = "a" }, { tenant = "b", provider = "legacy" }]
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns } },
  ]
  resources_template = <<-EOT
    apiVersion: v1
    kind: List
    items:
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: << inputs.provider.name >>-<< inputs.tenant >>
        data:
          provider: << inputs.provider.apiVersion >>/<< inputs.provider.kind >>/<< inputs.provider.namespace >>/<< inputs.provider.name >>
    ---
    apiVersion: kustomize.config.k8s.io/v1beta1
    kind: Kustomization
    metadata:
      name: build
    resources: [configmap.yaml]
  EOT
}
`
		return resource.TestCase{
			Steps: []resource.TestStep{{
				PreConfig:       rec.resetWarnings,
				Config:          cfg,
				ConfigVariables: nsVar(ns),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectWarning(rec, "Input key replaced", regexp.MustCompile(
						`^resourceset rc-[0-9a-f]+/compat: inputs\[1\] has a key "provider": every input of the set gets provider = \{ apiVersion = "fluxcd.controlplane.io/v1", kind = "ResourceSet", name = "compat", namespace = "rc-[0-9a-f]+" \}`)),
					expectWarning(rec, "Kustomize file left out", regexp.MustCompile(
						`^resourceset rc-[0-9a-f]+/compat: resources_template renders Kustomization/build of kustomize.config.k8s.io, a kustomize build file`)),
				}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("stevedore_resourceset.compat", "inventory.#", "3"),
					func(*terraform.State) error {
						for _, tenant := range []string{"a", "b"} {
							var cm corev1.ConfigMap
							if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns.String(), Name: "compat-" + tenant}, &cm); err != nil {
								return err
							}
							if want := "fluxcd.controlplane.io/v1/ResourceSet/" + ns.String() + "/compat"; cm.Data["provider"] != want {
								return fmt.Errorf("ConfigMap compat-%s has provider = %q, want %q", tenant, cm.Data["provider"], want)
							}
						}
						return nil
					},
					func(s *terraform.State) error {
						if m := s.RootModule().Resources["stevedore_resourceset.compat"].Primary.Attributes["manifests"]; strings.Contains(m, "kustomize.config.k8s.io") {
							return fmt.Errorf("manifests hold the kustomize Kustomization:\n%s", m)
						}
						return nil
					},
				),
			}},
		}
	})
}
