package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAccResourceSet_templateOutputRetypedWarns: a string that is all
// template output is read as YAML after the render, as flux-operator does
// ("yes" becomes true); the plan says so, naming the attribute, the value and
// the fix; quoted output is no warning. Apply keeps flux-operator's result.
func TestAccResourceSet_templateOutputRetypedWarns(t *testing.T) {
	ns := newPerCLI("rt")
	rec := &protocolRecord{}
	cfg := providerBlock("") + `
variable "ns" { type = string }

resource "stevedore_resourceset" "retype" {
  name      = "retype"
  namespace = "default"
  inputs    = [{ automount = "yes", replicas = "1" }]
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns } },
    {
      apiVersion                   = "v1"
      kind                         = "ServiceAccount"
      metadata                     = { name = "app", namespace = var.ns, annotations = { replicas = "<< inputs.replicas | quote >>" } }
      automountServiceAccountToken = "<< inputs.automount >>"
    },
  ]
}
`
	accTestWith(t, rec, resource.TestCase{
		Steps: []resource.TestStep{{
			PreConfig:       rec.resetWarnings,
			Config:          cfg,
			ConfigVariables: nsVar(ns),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectWarning(rec, "Template output is not a string", regexp.MustCompile(
					`^resourceset default/retype: resources\[1\]\.automountServiceAccountToken: "<< inputs.automount >>" renders to the boolean true `+
						`with inputs\[0\], not a string: .*To keep it a string, write "<< inputs.automount \| quote >>"$`)),
			}},
			Check: func(*terraform.State) error {
				var sa corev1.ServiceAccount
				if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns.String(), Name: "app"}, &sa); err != nil {
					return err
				}
				if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
					return fmt.Errorf("automountServiceAccountToken = %v, want true", sa.AutomountServiceAccountToken)
				}
				return nil
			},
		}},
	})
}
