package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// cli is a Terraform-compatible binary the acceptance tests run under.
type cli struct {
	name string
	path string
}

// clis are the binaries every acceptance case runs under: the newest
// OpenTofu (bin/tofu, tools/tofu) and the newest Terraform (bin/terraform-newest,
// tools/terraform-newest) that the Go module proxy serves, both built by
// `make tools`. Terraform 1.5.7 (bin/terraform), the oldest CLI supported,
// runs the smoke subset (oldestCLI).
// Without them a case fails, or is skipped under -short when skipShort.
func clis(t *testing.T, skipShort bool) []cli {
	t.Helper()
	bin := testenv.BinDir()
	return needCLIs(t, skipShort,
		cli{name: "tofu", path: filepath.Join(bin, "tofu")},
		cli{name: "terraform", path: filepath.Join(bin, "terraform-newest")},
	)
}

// needCLIs returns all, failing t (or skipping it under -short when
// skipShort) when one of them has not been built.
func needCLIs(t *testing.T, skipShort bool, all ...cli) []cli {
	t.Helper()
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

// cliVersions memoizes what each binary prints as its version.
var cliVersions sync.Map

// version is the version c's binary reports (`version -json`).
func (c cli) version() (string, error) {
	if v, ok := cliVersions.Load(c.path); ok {
		return v.(string), nil
	}
	cmd := exec.Command(c.path, "version", "-json")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", c.path, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", fmt.Errorf("%s version -json: %w", c.path, err)
	}
	cliVersions.Store(c.path, v.Version)
	return v.Version, nil
}

// cliStart serialises the start of the cases' runs. terraform-plugin-testing
// reads the CLI to run from the process's environment (TF_ACC_TERRAFORM_PATH,
// read once by plugintest.DiscoverConfig when resource.Test starts) and has no
// per-case setting for it; t.Setenv is refused in parallel tests. So a run
// sets the variable while it holds cliStart, and cliStarted releases it from
// the case's TerraformVersionChecks, which the harness runs right after it
// has found and asked the binary for its version, before any step.
var cliStart sync.Mutex

// cliStarted is the TerraformVersionCheck that releases cliStart, and checks
// that the harness found the binary that this run set.
type cliStarted struct {
	release func()
	cli     cli
}

func (c cliStarted) CheckTerraformVersion(_ context.Context, req tfversion.CheckTerraformVersionRequest, resp *tfversion.CheckTerraformVersionResponse) {
	c.release()
	want, err := c.cli.version()
	if err != nil {
		resp.Error = err
		return
	}
	if req.TerraformVersion == nil || req.TerraformVersion.String() != want {
		resp.Error = fmt.Errorf("the harness runs version %v, not %s %s", req.TerraformVersion, c.cli.name, want)
	}
}

// providerSource names the provider by the same address under both CLIs:
// the harness serves it in-process at TF_ACC_PROVIDER_HOST (read on every
// command, so it cannot differ between cases that run at once), and an
// unqualified "stevedore" means registry.opentofu.org to OpenTofu and
// registry.terraform.io to Terraform. Every step's configuration starts with
// it (withProviderSource); TestMain sets the host and namespace.
const providerSource = `
terraform {
  required_providers {
    stevedore = {
      source = "registry.terraform.io/hashicorp/stevedore"
    }
  }
}
`

// withProviderSource returns tc with providerSource added to the
// configuration of each step that has one (a step without reuses the last).
func withProviderSource(tc resource.TestCase) resource.TestCase {
	steps := make([]resource.TestStep, len(tc.Steps))
	for i, s := range tc.Steps {
		if s.Config != "" {
			s.Config = providerSource + s.Config
		}
		steps[i] = s
	}
	tc.Steps = steps
	return tc
}

// underCLIs runs tc under every CLI, each as a subtest, one after the other,
// with run (resource.Test, or resource.UnitTest for cases that need no
// TF_ACC). The provider is served through rec (a new record when nil), which
// fails the subtest for every apply that returned what its plan did not
// promise. The runs share tc, and so its names: that is why they take turns.
// Cases whose runs can have names of their own use underCLIsEach.
func underCLIs(t *testing.T, rec *protocolRecord, tc resource.TestCase, skipShort bool, run func(*testing.T, resource.TestCase)) {
	t.Helper()
	guardSteps(t, tc)
	if rec == nil {
		rec = &protocolRecord{}
	}
	for _, c := range clis(t, skipShort) {
		t.Run(c.name, func(t *testing.T) {
			rec.reset()
			runUnder(t, c, rec, tc, run)
			rec.verify(t)
		})
	}
}

// underCLIsEach runs a case under every CLI as parallel subtests: build makes
// each subtest's own case (its namespaces and release names, from that
// subtest's t) and gets the record that serves the provider to it. The
// subtests run after the calling test function has returned, so nothing
// may follow underCLIsEach in it: what a run checks goes into its case.
func underCLIsEach(t *testing.T, skipShort bool, build func(t *testing.T, rec *protocolRecord) resource.TestCase, run func(*testing.T, resource.TestCase)) {
	t.Helper()
	for _, c := range clis(t, skipShort) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := &protocolRecord{}
			tc := build(t, rec)
			guardSteps(t, tc)
			runUnder(t, c, rec, tc, run)
			rec.verify(t)
		})
	}
}

// runUnder runs tc under c, in t, through rec.
func runUnder(t *testing.T, c cli, rec *protocolRecord, tc resource.TestCase, run func(*testing.T, resource.TestCase)) {
	t.Helper()
	tc = withProviderSource(tc)
	tc.ProtoV6ProviderFactories = rec.factories()
	var once sync.Once
	release := func() { once.Do(cliStart.Unlock) }
	tc.TerraformVersionChecks = append(slices.Clone(tc.TerraformVersionChecks), cliStarted{release: release, cli: c})
	cliStart.Lock()
	defer release()
	if err := os.Setenv("TF_ACC_TERRAFORM_PATH", c.path); err != nil {
		t.Fatal(err)
	}
	run(t, tc)
}

// setCLIEnv sets, for the whole test process, what the harness reads on
// every command and so cannot differ between the runs of the two CLIs: the
// host and namespace the provider is served at (providerSource). Neither
// binary may reach a registry here; the harness serves the provider
// in-process.
func setCLIEnv() {
	for k, v := range map[string]string{
		"TF_ACC_PROVIDER_HOST":      "registry.terraform.io",
		"TF_ACC_PROVIDER_NAMESPACE": "hashicorp",
		"CHECKPOINT_DISABLE":        "1",
	} {
		if err := os.Setenv(k, v); err != nil {
			panic(err)
		}
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

// accTest runs one acceptance case under every CLI, each as a subtest, one
// after the other (underCLIs). The cluster comes from testenv.Main.
func accTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	accTestWith(t, nil, tc)
}

// accTestWith is accTest with the provider served through rec, for cases
// that assert the plans' warnings (expectWarning).
func accTestWith(t *testing.T, rec *protocolRecord, tc resource.TestCase) {
	t.Helper()
	needAcc(t)
	underCLIs(t, rec, tc, false, func(t *testing.T, tc resource.TestCase) { resource.Test(t, tc) })
}

// accTestEach runs one acceptance case under every CLI at once, each as a
// parallel subtest with the case that build makes for it (underCLIsEach).
func accTestEach(t *testing.T, build func(t *testing.T) resource.TestCase) {
	t.Helper()
	accTestEachWith(t, func(t *testing.T, _ *protocolRecord) resource.TestCase { return build(t) })
}

// accTestEachWith is accTestEach for cases that assert the plans' warnings
// through the record that serves the provider to their run.
func accTestEachWith(t *testing.T, build func(t *testing.T, rec *protocolRecord) resource.TestCase) {
	t.Helper()
	needAcc(t)
	underCLIsEach(t, false, build, func(t *testing.T, tc resource.TestCase) { resource.Test(t, tc) })
}

func needAcc(t *testing.T) {
	t.Helper()
	testenv.Need(t)
	if os.Getenv("TF_ACC") == "" {
		t.Fatal("acceptance tests need TF_ACC=1 (make test sets it)")
	}
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
