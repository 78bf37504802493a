package provider

import (
	"fmt"
	"maps"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// funcsConfig is a set whose namespace is var.ns, with the resources and
// the resources_template given.
func funcsConfig(resources, resourcesTemplate string) string {
	return providerBlock("") + `
variable "ns" { type = string }

resource "stevedore_resourceset" "funcs" {
  name      = "funcs"
  namespace = "default"
  inputs    = [{ labels = { tier = "gold" }, enabled = "true", selector = { app = "web", tier = "gold" } }]
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns } },
` + resources + `
  ]
  resources_template = <<-EOT
` + resourcesTemplate + `
  EOT
}
`
}

// TestAccResourceSet_templateFunctions: flux-operator's toYaml and
// mustToYaml keep the trailing newline (`toYaml | quote` and `toYaml |
// nindent` both as flux-operator renders them), `bool` makes a boolean of a
// string, and the next plan is empty (accTest). A function whose output
// changes on every call is refused at plan, with a diagnostic on the
// attribute, or the element of resources, that it is in (the CLIs show its
// lines), naming the function and the resource, even in a branch no input
// takes.
func TestAccResourceSet_templateFunctions(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := newPerCLI("fn")
		nested := `    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: nested
      namespace: ${var.ns}
    data: << inputs.selector | toYaml | nindent 2 >>`
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: funcsConfig(`
    {
      apiVersion = "v1"
      kind       = "ConfigMap"
      metadata   = { name = "yaml", namespace = var.ns }
      data = {
        quoted = "<< toYaml inputs.labels | quote >>"
        must   = "<< mustToYaml inputs.labels | quote >>"
      }
    },
    {
      apiVersion                   = "v1"
      kind                         = "ServiceAccount"
      metadata                     = { name = "app", namespace = var.ns }
      automountServiceAccountToken = "<< inputs.enabled | bool >>"
    },`, nested),
					ConfigVariables: nsVar(ns),
					Check: func(*terraform.State) error {
						c, ctx := testClient(t), t.Context()
						var cm corev1.ConfigMap
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns.String(), Name: "yaml"}, &cm); err != nil {
							return err
						}
						if want := map[string]string{"quoted": "tier: gold\n", "must": "tier: gold\n"}; !maps.Equal(cm.Data, want) {
							return fmt.Errorf("ConfigMap yaml has data %q, want %q", cm.Data, want)
						}
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns.String(), Name: "nested"}, &cm); err != nil {
							return err
						}
						if want := map[string]string{"app": "web", "tier": "gold"}; !maps.Equal(cm.Data, want) {
							return fmt.Errorf("ConfigMap nested has data %q, want %q", cm.Data, want)
						}
						var sa corev1.ServiceAccount
						if err := c.Get(ctx, client.ObjectKey{Namespace: ns.String(), Name: "app"}, &sa); err != nil {
							return err
						}
						if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
							return fmt.Errorf("automountServiceAccountToken = %v, want true", sa.AutomountServiceAccountToken)
						}
						return nil
					},
				},
				{
					Config: funcsConfig(`
    {
      apiVersion = "v1"
      kind       = "Secret"
      metadata   = { name = "key", namespace = var.ns }
      stringData = { "tls.key" = "<< genPrivateKey \"rsa\" >>" }
    },`, nested),
					ConfigVariables: nsVar(ns),
					PlanOnly:        true,
					ExpectError: wrapped(`Cannot plan the resource set .*in resource "stevedore_resourceset" "funcs": [0-9]+: \{ [0-9]+: apiVersion = "v1" [0-9]+: kind = "Secret"` +
						`.*resourceset default/funcs: resources\[1\]: .*` +
						`function "genPrivateKey" is not available: it is random, and the plan renders the templates again at apply`),
				},
				{
					Config:          funcsConfig("", nested+"\n    << if false >><< genCA \"ca\" 365 >><< end >>"),
					ConfigVariables: nsVar(ns),
					PlanOnly:        true,
					ExpectError: wrapped(`Cannot plan the resource set .*in resource "stevedore_resourceset" "funcs": [0-9]+: resources_template = ` +
						`.*resourceset default/funcs: resources_template: .*` +
						`function "genCA" is not available: it is random`),
				},
			},
		}
	})
}
