package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A resource-less configuration against the real cluster configures and plans
// clean, under both CLIs.
func TestAccProvider_configuresAndPlansClean(t *testing.T) {
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{Config: providerBlock(`field_manager = "stevedore-test"`)},
			{Config: providerBlock(""), PlanOnly: true},
		},
	})
}

func TestAccProvider_badConfiguration(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("{not: [yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	accTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config: `
provider "stevedore" {
  kubernetes {
    host     = "https://127.0.0.1:6443"
    token    = "abc"
    username = "admin"
    password = "secret"
  }
}`,
				ExpectError: regexp.MustCompile(`(?s)kubernetes\.username: conflicting authentication methods token and\s+username/password`),
			},
			{
				Config: `
provider "stevedore" {
  kubernetes {
    config_path = "` + filepath.Join(dir, "missing") + `"
  }
}`,
				ExpectError: regexp.MustCompile(`(?s)kubernetes\.config_path: cannot read kubeconfig`),
			},
			{
				Config: `
provider "stevedore" {
  kubernetes {
    config_path = "` + garbage + `"
  }
}`,
				ExpectError: regexp.MustCompile(`(?s)kubernetes\.config_path: cannot read kubeconfig`),
			},
			{
				Config: `
provider "stevedore" {
  kubernetes {
    config_path    = "` + testenv.Current().Cluster.Kubeconfig + `"
    config_context = "no-such-context"
  }
}`,
				ExpectError: regexp.MustCompile(`(?s)kubernetes\.config_context: context "no-such-context" not found`),
			},
		},
	})
}
