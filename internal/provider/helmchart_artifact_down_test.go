package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestAccHelmChartArtifact_repositoryDownKeepsPlanning: once the repository
// is down, with its index cache expired (repository_cache_ttl 0s: every plan
// asks), a plan of the unchanged configuration still succeeds and is empty,
// from the cached index and archive (with a warning), and destroy works
// without the repository.
func TestAccHelmChartArtifact_repositoryDownKeepsPlanning(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	// The repository as the provider sees it: passed through, or down (each
	// connection dropped without an answer).
	var down atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		http.Redirect(w, r, repo.URL()+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(front.Close)
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %q
  chart      = "podinfo"
  version    = "1.x"
}
`, front.URL)
	artifactAccTest(t, resource.TestCase{
		CheckDestroy: func(*terraform.State) error { return nil },
		Steps: []resource.TestStep{
			{
				PreConfig: func() { down.Store(false) },
				Config:    config,
				Check:     resource.TestCheckResourceAttr("stevedore_helmchart_artifact.podinfo", "chart_version", "1.1.0"),
			},
			{
				PreConfig: func() { down.Store(true) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// TestAccHelmChartArtifact_repositoryDownEmptyCacheDestroys: a fresh CI
// runner (empty cache) against a repository that is down. Refresh keeps the
// state with a warning, the plan keeps the recorded version with a warning
// (what it cannot fetch shows as built again), and a destroy with its
// refresh (the CLI's default, unlike the harness's cleanup) succeeds without
// the repository.
func TestAccHelmChartArtifact_repositoryDownEmptyCacheDestroys(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	var down atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		http.Redirect(w, r, repo.URL()+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(front.Close)
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %q
  chart      = "podinfo"
  version    = "1.x"
}
`, front.URL)
	rec := &protocolRecord{}
	kept := expectWarning(rec, "Repository unreachable: recorded version kept",
		regexp.MustCompile(`^helmchart_artifact `+regexp.QuoteMeta(front.URL)+`/podinfo: repository: failed to fetch .*The recorded chart_version 1\.1\.0 is kept`))
	// A fresh runner: the repository is down and nothing is cached.
	freshRunner := func() {
		down.Store(true)
		os.RemoveAll(cacheDir)
		rec.resetWarnings()
	}
	underCLIs(t, rec, resource.TestCase{
		CheckDestroy: func(*terraform.State) error { return nil },
		Steps: []resource.TestStep{
			{
				PreConfig: func() { down.Store(false); os.RemoveAll(cacheDir) },
				Config:    config,
				Check:     resource.TestCheckResourceAttr(artifactAddr, "chart_version", "1.1.0"),
			},
			{
				// The plan of the unchanged configuration: the artifact is
				// built again at apply (it is gone), at the recorded version.
				PreConfig:          freshRunner,
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// The state is kept (the artifact's path cleared: it is gone),
				// and the plan after it shows the artifact built again.
				PreConfig:          freshRunner,
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check:              resource.TestCheckResourceAttr(artifactAddr, "chart_version", "1.1.0"),
			},
			{
				// terraform destroy, with its refresh and the plan of the
				// configuration that refresh makes first.
				PreConfig: freshRunner,
				Config:    config,
				Destroy:   true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionDestroy),
					kept,
				}},
			},
		},
	}, true, func(t *testing.T, tc resource.TestCase) { resource.UnitTest(t, tc) })
}
