package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The action RPCs, forwarded by the recording server that serves the
// provider to terraform-plugin-testing: without them Terraform would find
// no actions.
type actionServer interface {
	ValidateActionConfig(context.Context, *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error)
	PlanAction(context.Context, *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error)
	InvokeAction(context.Context, *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error)
}

var _ actionServer = (*recordingServer)(nil)

func (s *recordingServer) actions() actionServer { return s.ProviderServer.(actionServer) }

func (s *recordingServer) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return s.actions().ValidateActionConfig(ctx, req)
}

func (s *recordingServer) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	return s.actions().PlanAction(ctx, req)
}

func (s *recordingServer) InvokeAction(ctx context.Context, req *tfprotov6.InvokeActionRequest) (*tfprotov6.InvokeActionServerStream, error) {
	return s.actions().InvokeAction(ctx, req)
}

// testActionBlock is an action "stevedore_helmrelease_test" named name whose
// config is body.
func testActionBlock(name, body string) string {
	return fmt.Sprintf("\naction \"stevedore_helmrelease_test\" %q {\n  config {\n%s\n  }\n}\n", name, body)
}

// testActionOfRelease is the action pointed at stevedore_helmrelease.podinfo
// by its names, as the action's docs show.
const testActionOfRelease = `    namespace        = stevedore_helmrelease.podinfo.namespace
    name             = stevedore_helmrelease.podinfo.name
    target_namespace = stevedore_helmrelease.podinfo.target_namespace
    release_name     = stevedore_helmrelease.podinfo.release_name
    storage_namespace = stevedore_helmrelease.podinfo.storage_namespace`

// hookRun is the last run of the test hook hook of release ns/name.
func hookRun(t *testing.T, ns, name, hook string) testenv.HookRun {
	t.Helper()
	runs, err := testenv.ReleaseTestHookRuns(testenv.Need(t).Cluster.Kubeconfig, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return runs[hook]
}

// checkHookRan checks that the test hook of release ns/podinfo last ran
// after *since, in phase.
func checkHookRan(t *testing.T, ns string, since *time.Time, phase string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		run := hookRun(t, ns, "podinfo", "podinfo-test")
		if run.Phase != phase || run.Started.Before(*since) {
			return fmt.Errorf("test hook podinfo-test last ran %s in phase %s, want a run after %s in phase %s",
				run.Started.Format(time.RFC3339Nano), run.Phase, since.Format(time.RFC3339Nano), phase)
		}
		return nil
	}
}

// TestAccHelmReleaseTestAction_trigger: the action in a release's
// action_trigger runs the release's tests after create and after update
// (the resource itself runs none: test.enable is not set); a failing test
// fails the apply after the release was saved, and the next plan is empty.
func TestAccHelmReleaseTestAction_trigger(t *testing.T) {
	t.Parallel()
	accTestEachWith(t, func(t *testing.T, rec *protocolRecord) resource.TestCase {
		ns := uniqueNamespace(t, "hr-tact-trig")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(replicas int, fail bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
  values = { replicaCount = %d, test = { fail = %t } }
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.stevedore_helmrelease_test.podinfo]
    }
  }`, replicas, fail)) + testActionBlock("podinfo", testActionOfRelease)
		}
		var since time.Time
		mark := func() { since = time.Now() }
		return resource.TestCase{
			TerraformVersionChecks: []tfversion.TerraformVersionCheck{needsCLI(cliActions)},
			Steps: []resource.TestStep{
				{
					PreConfig: mark,
					Config:    config(1, false),
					Check: resource.ComposeTestCheckFunc(
						checkHookRan(t, ns, &since, "Succeeded"),
						checkRevisions(t, ns, "podinfo", "1:deployed"),
					),
				},
				{
					PreConfig: mark,
					Config:    config(2, false),
					Check: resource.ComposeTestCheckFunc(
						checkHookRan(t, ns, &since, "Succeeded"),
						checkRevisions(t, ns, "podinfo", "1:superseded", "2:deployed"),
					),
				},
				{
					// The upgrade is saved; the action that follows it fails,
					// with the failed hook's pod logs.
					PreConfig:   mark,
					Config:      config(2, true),
					ExpectError: regexp.MustCompile(`(?s)Helm tests failed.*podinfo-test.*logs of test pod ` + ns + `/podinfo-test, container curl`),
				},
				{
					// The failed run is in the release, and the next plan is empty:
					// the resource does not run tests (test.enable), so their
					// results are not its business.
					PreConfig: func() {
						if err := checkHookRan(t, ns, &since, "Failed")(nil); err != nil {
							t.Error(err)
						}
						if err := checkRevisions(t, ns, "podinfo", "1:superseded", "2:superseded", "3:deployed")(nil); err != nil {
							t.Error(err)
						}
					},
					Config:   config(2, true),
					PlanOnly: true,
				},
			},
		}
	})
}

// TestAccHelmReleaseTestAction_invoke: `terraform apply -invoke` of the
// action, as a user runs it: the hook's phases stream as progress, Helm
// records the run in the release (no new revision), the state is not
// written, the next plan is empty; a failing test fails with its pod's logs;
// a release that does not exist, or is not deployed, is refused on the
// attribute that names it, and nothing is written.
func TestAccHelmReleaseTestAction_invoke(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		c.need(t, cliActions)
		ns := uniqueNamespace(t, "hr-tact-inv")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		config := func(fail bool) string {
			return releaseConfig(cacheDir, chartDir, ns, fmt.Sprintf(`  values = { test = { fail = %t } }`, fail)) +
				testActionBlock("podinfo", testActionOfRelease) +
				testActionBlock("missing", fmt.Sprintf("    namespace = %q\n    name = \"nothing-here\"", ns)) +
				testActionBlock("filtered", fmt.Sprintf("    namespace = %q\n    name = \"podinfo\"\n    timeout = \"2m\"\n    filters {\n      name = \"podinfo-test\"\n      exclude = true\n    }", ns))
		}
		w := newWorkspace(t, c, config(false))
		if out, code := w.apply(); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		w.planEmpty()
		state := func() []byte {
			b, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		invoke := func(name string) (string, int) {
			return w.run("apply", "-invoke=action.stevedore_helmrelease_test."+name, "-auto-approve", "-input=false")
		}

		// Passes: the phases stream, the run is in the release, state is
		// not written. `apply -invoke` saves what its refresh read, as any
		// apply does (a release's `changes` are cleared by refresh): refresh
		// first, so that the state compared is the refreshed one.
		w.must("apply", "-refresh-only", "-auto-approve", "-input=false")
		before, since := state(), time.Now()
		out, code := invoke("podinfo")
		if code != 0 {
			t.Fatalf("invoke: exit %d\n%s", code, out)
		}
		t.Logf("the passing invoke:\n%s", out)
		for _, want := range []string{"test hook podinfo-test: Running", "test hook podinfo-test: Succeeded",
			"release " + ns + "/podinfo v1 (podinfo@1.0.0): 1 test hook(s) succeeded (podinfo-test)"} {
			if !strings.Contains(out, want) {
				t.Errorf("invoke output lacks %q\n%s", want, out)
			}
		}
		if err := checkHookRan(t, ns, &since, "Succeeded")(nil); err != nil {
			t.Error(err)
		}
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Errorf("revisions %v after the test, want 1:deployed", got)
		}
		if after := state(); !slices.Equal(before, after) {
			t.Errorf("the action changed the state file:\n%s\n---\n%s", before, after)
		}
		w.planEmpty()

		// A filter that excludes the only hook: nothing runs.
		ran := hookRun(t, ns, "podinfo", "podinfo-test")
		out, code = invoke("filtered")
		if code != 0 || !strings.Contains(out, "no test hooks ran") {
			t.Errorf("filtered invoke: exit %d, want 0 and no test hooks ran\n%s", code, out)
		}
		if got := hookRun(t, ns, "podinfo", "podinfo-test"); !got.Started.Equal(ran.Started) {
			t.Errorf("the excluded hook ran again: %+v, was %+v", got, ran)
		}

		// A release that does not exist: refused on `name`, nothing written.
		out, code = invoke("missing")
		if code == 0 || !strings.Contains(out, "name: no Helm release nothing-here in storage namespace "+ns) {
			t.Errorf("missing release: exit %d, want an error naming name\n%s", code, out)
		}
		if revs, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "nothing-here"); err == nil && len(revs) > 0 {
			t.Errorf("the missing release has revisions %v", revs)
		}

		// Fails: the upgrade (which runs no tests) is applied, then the
		// action fails with the pod's logs; the next plan is still empty.
		w.write(config(true))
		if out, code := w.apply(); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		w.planEmpty()
		since = time.Now()
		out, code = invoke("podinfo")
		if code == 0 {
			t.Fatalf("failing test: exit 0\n%s", out)
		}
		t.Logf("the failing invoke:\n%s", out)
		for _, want := range []string{"test hook podinfo-test: Running", "test hook podinfo-test: Failed", "Helm tests failed",
			"logs of test pod " + ns + "/podinfo-test, container curl"} {
			if !strings.Contains(out, want) {
				t.Errorf("failing invoke output lacks %q\n%s", want, out)
			}
		}
		if err := checkHookRan(t, ns, &since, "Failed")(nil); err != nil {
			t.Error(err)
		}
		w.planEmpty()

		// Not deployed: refused on `release_name` (the action names the
		// release by it), nothing written.
		if err := testenv.SetReleaseStatus(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo", "failed"); err != nil {
			t.Fatal(err)
		}
		ran = hookRun(t, ns, "podinfo", "podinfo-test")
		out, code = invoke("podinfo")
		if code == 0 || !strings.Contains(out, "release_name: the Helm release podinfo v2 in storage namespace "+ns+" is failed, not deployed") {
			t.Errorf("failed release: exit %d, want an error naming release_name\n%s", code, out)
		}
		if got := hookRun(t, ns, "podinfo", "podinfo-test"); !got.Started.Equal(ran.Started) || got.Phase != ran.Phase {
			t.Errorf("the test of a failed release ran: %+v, was %+v", got, ran)
		}
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:failed"}) {
			t.Errorf("revisions %v, want 1:superseded 2:failed", got)
		}
		w.destroy()
	})
}

// TestAccHelmReleaseTestAction_badConfig: a malformed timeout or name is
// refused at validate, on the attribute, before anything runs.
func TestAccHelmReleaseTestAction_badConfig(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		c.need(t, cliActions)
		w := newWorkspace(t, c, providerBlock("")+testActionBlock("bad", `    namespace = "Not_A_Namespace"
    name      = "podinfo"
    timeout   = "soon"`))
		out, code := w.run("validate")
		if code == 0 {
			t.Fatalf("validate: exit 0\n%s", out)
		}
		for _, want := range []string{"Invalid duration", "timeout", "namespace", "must be a DNS label"} {
			if !strings.Contains(out, want) {
				t.Errorf("validate output lacks %q\n%s", want, out)
			}
		}
	})
}

// TestAccHelmReleaseTestAction_nextPlanWithResourceTests: what the action's
// docs say of a resource that enables `test`: a passing run leaves its next
// plan empty; a failing one makes the release one whose tests failed (the
// resource reads test results from the release in Helm storage, where the
// action records them), and the next plan remediates.
func TestAccHelmReleaseTestAction_nextPlanWithResourceTests(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		c.need(t, cliActions)
		ns := uniqueNamespace(t, "hr-tact-next")
		chartDir := chartCopy(t, "1.0.0")
		testenv.WriteFiles(t, chartDir, map[string]string{"templates/tests/test-other.yaml": failingTestHook})
		w := newWorkspace(t, c, releaseConfig(t.TempDir(), chartDir, ns, `
  test {
    enable = true
    filters {
      name    = "podinfo-test-other"
      exclude = true
    }
  }`)+testActionBlock("mine", fmt.Sprintf("    namespace = %q\n    name = \"podinfo\"\n    filters {\n      name = \"podinfo-test\"\n    }", ns))+
			testActionBlock("all", fmt.Sprintf("    namespace = %q\n    name = \"podinfo\"", ns)))
		if out, code := w.apply(); code != 0 {
			t.Fatalf("apply: exit %d\n%s", code, out)
		}
		w.planEmpty()
		if out, code := w.run("apply", "-invoke=action.stevedore_helmrelease_test.mine", "-auto-approve", "-input=false"); code != 0 {
			t.Fatalf("passing invoke: exit %d\n%s", code, out)
		}
		w.planEmpty()
		out, code := w.run("apply", "-invoke=action.stevedore_helmrelease_test.all", "-auto-approve", "-input=false")
		if code == 0 || !strings.Contains(out, "test hook podinfo-test-other: Failed") {
			t.Fatalf("failing invoke: exit %d, want a failure of podinfo-test-other\n%s", code, out)
		}
		out, code = w.run("plan", "-detailed-exitcode", "-input=false")
		if code != 2 {
			t.Fatalf("plan after a failed run under test.enable: exit %d, want 2 (changes: remediation)\n%s", code, out)
		}
		t.Logf("the plan after the failed run:\n%s", out)
		w.destroy()
	})
}

// TestAccHelmRelease_testFailureShowsHookLogs: a failed test of the
// resource's own apply carries the failed hook's pod logs, as the action's
// failure does (one test runner): under every CLI, OpenTofu included.
func TestAccHelmRelease_testFailureShowsHookLogs(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-testlogs")
		return resource.TestCase{
			Steps: []resource.TestStep{{
				Config: releaseConfig(t.TempDir(), chartCopy(t, "1.0.0"), ns, `
  values = { test = { fail = true } }
  test {
    enable = true
  }`),
				ExpectError: regexp.MustCompile(`(?s)test failed: .*pod podinfo-test failed\s+logs of test pod\s+` + ns + `/podinfo-test, container\s+curl`),
			}},
		}
	})
}
