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

// TestAccResourceSet_planWarnsAboutTheRender: what the render does that a
// user may not expect is said at plan, and apply keeps flux-operator's
// result: a string that is all template output is read as YAML ("yes"
// becomes true; the warning names the attribute, the value and the fix, and
// quoted output is no warning); a namespace on a cluster-scoped object is
// ignored; of two objects of the same name with different content, the first
// is applied.
func TestAccResourceSet_planWarnsAboutTheRender(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := newPerCLI("rt")
		cfg := providerBlock("") + `
variable "ns" { type = string }

resource "stevedore_resourceset" "retype" {
  name      = "retype"
  namespace = "default"
  inputs    = [{ automount = "yes", replicas = "1" }]
  resources = [
    { apiVersion = "v1", kind = "Namespace", metadata = { name = var.ns, namespace = "default" } },
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "twice", namespace = var.ns }, data = { copy = "first" } },
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "twice", namespace = var.ns }, data = { copy = "second" } },
    {
      apiVersion                   = "v1"
      kind                         = "ServiceAccount"
      metadata                     = { name = "app", namespace = var.ns, annotations = { replicas = "<< inputs.replicas | quote >>" } }
      automountServiceAccountToken = "<< inputs.automount >>"
    },
  ]
}
`
		return resource.TestCase{
			Steps: []resource.TestStep{{
				PreConfig:       rec.resetWarnings,
				Config:          cfg,
				ConfigVariables: nsVar(ns),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectWarning(rec, "Template output is not a string", regexp.MustCompile(
						`^resourceset default/retype: resources\[3\]\.automountServiceAccountToken: "<< inputs.automount >>" renders to the boolean true `+
							`with inputs\[0\], not a string: .*To keep it a string, write "<< inputs.automount \| quote >>"$`)),
					expectWarning(rec, "Namespace of a cluster-scoped object ignored", regexp.MustCompile(
						`^resourceset default/retype: Namespace rt-[0-9a-f]+ names the namespace "default", but Namespace is cluster-scoped: the namespace is ignored$`)),
					expectWarning(rec, "Object rendered more than once", regexp.MustCompile(
						`^resourceset default/retype: ConfigMap/rt-[0-9a-f]+/twice is rendered 1 more time\(s\) with different content: the first one rendered is applied`)),
				}},
				Check: func(*terraform.State) error {
					var sa corev1.ServiceAccount
					if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns.String(), Name: "app"}, &sa); err != nil {
						return err
					}
					if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
						return fmt.Errorf("automountServiceAccountToken = %v, want true", sa.AutomountServiceAccountToken)
					}
					var cm corev1.ConfigMap
					if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns.String(), Name: "twice"}, &cm); err != nil {
						return err
					}
					if cm.Data["copy"] != "first" {
						return fmt.Errorf("ConfigMap twice has copy = %q, want the first one rendered", cm.Data["copy"])
					}
					return nil
				},
			}},
		}
	})
}
