package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// A resource-less configuration against the real cluster applies and plans
// clean, under both CLIs. (Neither CLI starts a provider that no resource uses:
// the configuration diagnostics are tested at the protocol level in
// configure_test.go.)
func TestAccProvider_resourceLessConfigPlansClean(t *testing.T) {
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: providerBlock(`field_manager = "stevedore-test"`)},
			{Config: providerBlock(""), PlanOnly: true},
		},
	})
}
