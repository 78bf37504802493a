package provider

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
