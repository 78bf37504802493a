package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// tofu runs the built OpenTofu in dir with the provider from ./bin (a dev
// override, as make demo does) and returns its exit code.
func tofu(b *testing.B, dir, rc string, args ...string) int {
	b.Helper()
	code, _ := tofuCPU(b, dir, rc, args...)
	return code
}

// tofuCPU is tofu, and also returns the CPU time of tofu with the providers it
// started (wait4 counts the children a process has waited for).
func tofuCPU(b *testing.B, dir, rc string, args ...string) (int, time.Duration) {
	b.Helper()
	cmd := exec.Command(filepath.Join(testenv.BinDir(), "tofu"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+rc, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if dir := os.Getenv("STEVEDORE_BENCH_LOG_DIR"); dir != "" {
		// What the CLI printed, each run appended: a resource's "Creation
		// complete after" is where an apply's time went.
		if f, ferr := os.OpenFile(filepath.Join(dir, filepath.Base(cmd.Dir)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); ferr == nil {
			fmt.Fprintf(f, "== tofu %s\n%s", strings.Join(args, " "), out.String())
			f.Close()
		}
	}
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == 1 {
			b.Fatalf("tofu %v failed:\n%s", args, out.String())
		}
		return exit.ExitCode(), cpu
	}
	if err != nil {
		b.Fatal(err)
	}
	return 0, cpu
}

// providerBinary is the provider that make build wrote into ./bin.
func providerBinary(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(testenv.BinDir(), "terraform-provider-stevedore")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%s: run make build first", bin)
	}
	return bin
}

// writeDevOverride writes, into dir, a CLI configuration that takes the
// provider from providerDir, and returns its path.
func writeDevOverride(b *testing.B, dir, providerDir string) string {
	b.Helper()
	rc := filepath.Join(dir, "tofurc")
	cfg := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"stevedore-dev/stevedore\" = %q\n  }\n  direct {}\n}\n", providerDir)
	if err := os.WriteFile(rc, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	return rc
}

// BenchmarkTofuPlanResourceSet500 times a whole `tofu plan` (refresh with drift
// detection, and plan-time rendering) of a 500-object set that is up to date:
// what a CI pipeline pays on every run. Needs `make build` (make bench does it).
func BenchmarkTofuPlanResourceSet500(b *testing.B) {
	env := testenv.Need(b)
	providerBinary(b)
	dir := b.TempDir()
	rc := writeDevOverride(b, dir, testenv.BinDir())
	cfg := fmt.Sprintf(`
terraform {
  required_providers {
    stevedore = { source = "stevedore-dev/stevedore" }
  }
}
provider "stevedore" {
  kubernetes { config_path = %q }
}
resource "stevedore_resourceset" "bench" {
  name      = "bench"
  namespace = "bench-plan"
  inputs    = [for i in range(100) : { t = format("t%%03d", i) }]
  resources_template = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: << inputs.t >>}
    data: {tenant: << inputs.t >>}
    ---
    apiVersion: v1
    kind: Secret
    metadata: {name: << inputs.t >>}
    stringData: {token: << inputs.t | sha256sum >>}
    ---
    apiVersion: v1
    kind: ServiceAccount
    metadata: {name: << inputs.t >>}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: << inputs.t >>}
    spec:
      clusterIP: None
      selector: {app: << inputs.t >>}
      ports: [{port: 80}]
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: Role
    metadata: {name: << inputs.t >>}
    rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
  EOT
}
`, env.Cluster.Kubeconfig)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	if _, err := env.Cluster.Kubectl(context.Background(), "create", "namespace", "bench-plan"); err != nil {
		b.Fatal(err)
	}
	tofu(b, dir, rc, "apply", "-auto-approve", "-input=false")
	b.Cleanup(func() { tofu(b, dir, rc, "destroy", "-auto-approve", "-input=false") })

	for b.Loop() {
		if code := tofu(b, dir, rc, "plan", "-input=false", "-detailed-exitcode"); code != 0 {
			b.Fatalf("plan of an unchanged set exited %d: want an empty plan", code)
		}
	}
}
