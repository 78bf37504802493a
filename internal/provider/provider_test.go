package provider

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The provider block's field_manager is the manager of every server-side
// apply, under both CLIs: the object the set applies is managed by it (and
// not by the default `stevedore`), and the next plan, whose drift dry runs
// use the same manager, is empty.
func TestAccProvider_fieldManagerAppliesAndPlansClean(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "prov-fm")
		const manager = "stevedore-test"
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: providerBlock(fmt.Sprintf("field_manager = %q", manager)) + fmt.Sprintf(`
resource "stevedore_resourceset" "fm" {
  name      = "fm"
  namespace = %q
  resources = [{ apiVersion = "v1", kind = "ConfigMap", metadata = { name = "fm" }, data = { a = "b" } }]
}
`, ns),
				Check: func(*terraform.State) error {
					cm := &corev1.ConfigMap{}
					if err := testClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "fm"}, cm); err != nil {
						return err
					}
					var managers []string
					for _, f := range cm.ManagedFields {
						managers = append(managers, f.Manager+"/"+string(f.Operation))
					}
					if !slices.Contains(managers, manager+"/Apply") || slices.Contains(managers, "stevedore/Apply") {
						return fmt.Errorf("managers of ConfigMap %s/fm: %v, want %s/Apply only", ns, managers, manager)
					}
					return nil
				},
			}},
		}
	})
}
