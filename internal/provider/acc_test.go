package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// cli is a Terraform-compatible binary the acceptance tests run against.
type cli struct {
	name string
	path string
	// host is the registry host the binary assumes for an unqualified provider
	// source; the test harness must serve the provider under it.
	host string
}

// clis are the binaries every acceptance case runs under: OpenTofu and Terraform
// 1.5.7, both built by `make tools`.
// Without them a case fails, or is skipped under -short when skipShort.
func clis(t *testing.T, skipShort bool) []cli {
	t.Helper()
	bin := testenv.BinDir()
	all := []cli{
		{name: "tofu", path: filepath.Join(bin, "tofu"), host: "registry.opentofu.org"},
		{name: "terraform", path: filepath.Join(bin, "terraform"), host: "registry.terraform.io"},
	}
	for _, c := range all {
		if _, err := os.Stat(c.path); err != nil {
			if skipShort && testing.Short() {
				t.Skipf("%s not found at %s: run `make tools`", c.name, c.path)
			}
			t.Fatalf("%s not found at %s: run `make tools`", c.name, c.path)
		}
	}
	return all
}

// underCLIs runs tc under every CLI, each as a subtest, with run
// (resource.Test, or resource.UnitTest for cases that need no TF_ACC). The
// provider is served through rec (a new record when nil), which fails the
// subtest for every apply that returned what its plan did not promise.
func underCLIs(t *testing.T, rec *protocolRecord, tc resource.TestCase, skipShort bool, run func(*testing.T, resource.TestCase)) {
	t.Helper()
	guardSteps(t, tc)
	if rec == nil {
		rec = &protocolRecord{}
	}
	for _, c := range clis(t, skipShort) {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("TF_ACC_TERRAFORM_PATH", c.path)
			t.Setenv("TF_ACC_PROVIDER_HOST", c.host)
			t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "hashicorp")
			// Neither binary may reach a registry here; the harness serves the
			// provider in-process.
			t.Setenv("CHECKPOINT_DISABLE", "1")
			rec.reset()
			tc.ProtoV6ProviderFactories = rec.factories()
			run(t, tc)
			rec.verify(t)
		})
	}
}

// guardSteps holds every case to the rule that an apply plans empty
// afterwards: a step that applies may not expect a non-empty plan after it
// (the harness then skips its empty-plan check). Only plan-only and refresh
// steps, which apply nothing, may.
func guardSteps(t *testing.T, tc resource.TestCase) {
	t.Helper()
	for i, s := range tc.Steps {
		applies := !s.PlanOnly && !s.RefreshState && !s.ImportState && s.ExpectError == nil
		if applies && s.ExpectNonEmptyPlan {
			t.Fatalf("step %d applies and expects a non-empty plan after it: every apply must be followed by an empty plan", i+1)
		}
	}
}

// accTest runs one acceptance case under every CLI, each as a subtest. The
// cluster comes from testenv.Main.
func accTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	accTestWith(t, nil, tc)
}

// accTestWith is accTest with the provider served through rec, for cases
// that assert the plans' warnings (expectWarning).
func accTestWith(t *testing.T, rec *protocolRecord, tc resource.TestCase) {
	t.Helper()
	testenv.Need(t)
	if os.Getenv("TF_ACC") == "" {
		t.Fatal("acceptance tests need TF_ACC=1 (make test sets it)")
	}
	underCLIs(t, rec, tc, false, func(t *testing.T, tc resource.TestCase) { resource.Test(t, tc) })
}

// providerBlock configures the provider against the test cluster. Under -short
// there is no cluster; the configuration is then never used, as accTest skips.
func providerBlock(extra string) string {
	kubeconfig := ""
	if env := testenv.Current(); env != nil {
		kubeconfig = env.Cluster.Kubeconfig
	}
	return fmt.Sprintf(`
provider "stevedore" {
  kubernetes {
    config_path = %q
  }
  %s
}
`, kubeconfig, extra)
}
