package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// cli is a Terraform-compatible binary the acceptance tests run under.
type cli struct {
	// name names the run: its subtest, and a part of the names of its
	// namespaces in some tests.
	name string
	// product is "terraform" or "opentofu", as cliFeature tells them apart.
	product string
	path    string
}

// clis are the binaries every acceptance case runs under: the newest
// OpenTofu (bin/tofu, tools/tofu) and the newest Terraform (bin/terraform-newest,
// built from Terraform's git source by tools/build-newest.sh), both built by
// `make tools`; and, for the tests of the smoke subset (smokeUnderOldestCLI),
// oldestCLI as well. Without them a case fails, or is skipped under -short
// when skipShort.
func clis(t *testing.T, skipShort bool) []cli {
	t.Helper()
	bin := testenv.BinDir()
	all := []cli{
		{name: "tofu", product: "opentofu", path: filepath.Join(bin, "tofu")},
		{name: "terraform", product: "terraform", path: filepath.Join(bin, "terraform-newest")},
	}
	if inSmokeSubset(t.Name()) {
		all = append(all, oldestCLI())
	}
	return needCLIs(t, skipShort, all...)
}

// oldestCLI is the oldest CLI supported: Terraform 1.5.7 (bin/terraform,
// tools/terraform), the last release under the MPL, which people who stay
// on it still run. It runs the smoke subset, smokeUnderOldestCLI, not every
// case: enough to keep the provider working for them at a small cost.
func oldestCLI() cli {
	return cli{name: "terraform-oldest", product: "terraform", path: filepath.Join(testenv.BinDir(), "terraform")}
}

// smokeUnderOldestCLI are the tests that run under oldestCLI as well as under
// clis' newest two, each with what it covers there: install, upgrade, drift,
// import and destroy of each resource, and each data source's read. Each
// name is a test function's (its every subtest runs); a name that matches
// no test fails TestSmokeUnderOldestCLI_namesTests. A case in it that needs a
// feature Terraform 1.5.7 lacks skips there with the reason (needsCLI).
var smokeUnderOldestCLI = map[string]string{
	"TestAccHelmChartArtifact_httpRepository":             "stevedore_helmchart_artifact: create, a new version in range (upgrade), the cache deleted (drift), destroy",
	"TestAccHelmRelease_lifecycle":                        "stevedore_helmrelease: install, upgrades, drift seen and corrected, destroy",
	"TestAccHelmRelease_importHelmInstalled":              "stevedore_helmrelease: import block of a release the Helm SDK installed, empty plan",
	"TestAccResourceSet_tenantsMatrixPruneAndDrift":       "stevedore_resourceset: create, update, prune, drift, destroy",
	"TestAccOwnership_killedSetCreateRecoversByImport":    "stevedore_resourceset: import (terraform import), apply, destroy",
	"TestAccHelmTemplate_isHelmTemplate":                  "data source stevedore_helm_template: read",
	"TestAccResourceSetRender":                            "data source stevedore_resourceset_render: read",
	"TestAccHelmRelease_importFluxReleaseByHelmReleaseID": "stevedore_helmrelease: import of a release helm-controller made, by the HelmRelease's ID, empty plan",
	"TestAccOwnership_takeOverFromFluxOperator":           "stevedore_resourceset: take-over of flux-operator's objects, prune, destroy",
	"TestAccResourceSetInputs_static":                     "data source stevedore_resourceset_inputs: read",
}

// inSmokeSubset reports whether the test named name (t.Name()) belongs to
// smokeUnderOldestCLI: it, or the test function it is a subtest of.
func inSmokeSubset(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	_, ok := smokeUnderOldestCLI[top]
	return ok
}

// cliFeature is something of the CLI that not every CLI under test has. A
// case that needs one says so, in one place, and is skipped under a CLI that
// lacks it, with the reason:
//
//   - a case run by accTest, accTestEach or underCLIs lists it in its
//     TerraformVersionChecks: needsCLI(cliWriteOnly, ...);
//   - a test that runs the CLI itself (forEachCLI, workspace) calls
//     c.need(t, cliWriteOnly, ...) with the run's cli.
//
// A feature is the versions of each product that have it, as go-version
// constraints; alternatives are joined by "||" (a fix backported to an older
// minor line); cliNone says that no version of the product has it.
type cliFeature struct {
	what      string
	terraform string
	opentofu  string
}

// The features that some supported CLIs lack. Add one here, with the first
// versions that have it, rather than comparing versions in a test.
var (
	// cliMovedAcrossTypes: a moved block whose from and to are resources of
	// different types (from another provider's resource to stevedore's).
	cliMovedAcrossTypes = cliFeature{
		what:      "moved blocks between resource types",
		terraform: ">= 1.8.0",
		opentofu:  ">= 1.10.0",
	}
	// cliMovedAcrossTypesFullSource: cliMovedAcrossTypes where the providers
	// are named by full source addresses, as every resource.Test case names
	// stevedore (providerSource: registry.terraform.io under OpenTofu too).
	// OpenTofu resolves these from 1.11.12 and 1.12.4.
	cliMovedAcrossTypesFullSource = cliFeature{
		what:      "moved blocks between resource types of providers named by full source addresses",
		terraform: ">= 1.8.0",
		opentofu:  "~> 1.11.12 || >= 1.12.4",
	}
	// cliWriteOnly: write-only attributes (never stored in plan or state).
	cliWriteOnly = cliFeature{
		what:      "write-only attributes",
		terraform: ">= 1.11.0",
		opentofu:  ">= 1.11.0",
	}
	// cliIdentity: resource identity (import blocks by identity, the
	// identity in state and in list results).
	cliIdentity = cliFeature{
		what:      "resource identity",
		terraform: ">= 1.12.0",
		opentofu:  ">= 1.12.0",
	}
	// cliQuery: list resources, `list` blocks in .tfquery.hcl files and
	// `terraform query` (-generate-config-out). OpenTofu has none (its
	// issue 3787).
	cliQuery = cliFeature{
		what:      "list resources (terraform query)",
		terraform: ">= 1.14.0",
		opentofu:  cliNone,
	}
	// cliActions: action blocks, `apply -invoke` and action_trigger.
	// OpenTofu has none (its issue 3309).
	cliActions = cliFeature{
		what:      "actions",
		terraform: ">= 1.14.0",
		opentofu:  cliNone,
	}
)

// cliNone is a cliFeature's versions of a product that has no version of it.
const cliNone = "none"

// lacks says why c lacks one of features ("" when it has them all).
func (c cli) lacks(features ...cliFeature) (string, error) {
	raw, err := c.version()
	if err != nil {
		return "", err
	}
	v, err := version.NewVersion(raw)
	if err != nil {
		return "", fmt.Errorf("%s version %q: %w", c.path, raw, err)
	}
	for _, f := range features {
		var want string
		switch c.product {
		case "terraform":
			want = f.terraform
		case "opentofu":
			want = f.opentofu
		default:
			return "", fmt.Errorf("cli %s: unknown product %q", c.name, c.product)
		}
		has := false
		for alt := range strings.SplitSeq(want, "||") {
			if want == cliNone {
				break
			}
			cs, err := version.NewConstraint(strings.TrimSpace(alt))
			if err != nil {
				return "", fmt.Errorf("cliFeature %q: %w", f.what, err)
			}
			has = has || cs.Check(v.Core())
		}
		if !has {
			return fmt.Sprintf("%s %s lacks %s (Terraform %s, OpenTofu %s)", c.product, raw, f.what, f.terraform, f.opentofu), nil
		}
	}
	return "", nil
}

// need skips t, with the reason, when c lacks one of features.
func (c cli) need(t *testing.T, features ...cliFeature) {
	t.Helper()
	why, err := c.lacks(features...)
	if err != nil {
		t.Fatal(err)
	}
	if why != "" {
		t.Skip(why)
	}
}

// needsCLI is how a resource.Test case says that it needs features of the
// CLI: put it in the case's TerraformVersionChecks. Under a CLI that lacks
// one, the run is skipped with the reason (cli.lacks) before any step.
func needsCLI(features ...cliFeature) tfversion.TerraformVersionCheck {
	return cliNeeds{features: features}
}

// cliNeeds is needsCLI's check; runUnder binds the run's cli to it, since
// the harness passes a check only the version, which does not tell
// OpenTofu from Terraform.
type cliNeeds struct {
	features []cliFeature
	cli      *cli
}

func (n cliNeeds) CheckTerraformVersion(_ context.Context, _ tfversion.CheckTerraformVersionRequest, resp *tfversion.CheckTerraformVersionResponse) {
	if n.cli == nil {
		resp.Error = fmt.Errorf("needsCLI is for cases run by accTest, accTestEach or underCLIs")
		return
	}
	why, err := n.cli.lacks(n.features...)
	resp.Error, resp.Skip = err, why
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
	checks := slices.Clone(tc.TerraformVersionChecks)
	for i, check := range checks {
		if n, ok := check.(cliNeeds); ok {
			n.cli = &c
			checks[i] = n
		}
	}
	tc.TerraformVersionChecks = append(checks, cliStarted{release: release, cli: c})
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
	// A TF_CLI_CONFIG_FILE that names no file makes OpenTofu 1.12 print a
	// warning before its version, which the harness cannot parse: no
	// configuration is what the cases mean then.
	if f := os.Getenv("TF_CLI_CONFIG_FILE"); f != "" {
		if _, err := os.Stat(f); err != nil {
			if err := os.Unsetenv("TF_CLI_CONFIG_FILE"); err != nil {
				panic(err)
			}
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
