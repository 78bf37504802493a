package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// savedPlanConfig is an artifact of repo's podinfo and a release of it, with
// the provider's default cache directory (XDG_CACHE_HOME decides it), so that
// a plan and its apply can run with two different caches.
func savedPlanConfig(repo, ns string) string {
	return providerBlock(`repository_cache_ttl = "0s"`) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
}

resource "stevedore_helmrelease" "podinfo" {
  name      = "podinfo"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
  values = { replicaCount = 1 }
}
`, hcl(repo), ns)
}

// TestCLI_savedPlanOfAChartVersionBump is the most common upgrade, planned in
// one CI job and applied in another: a new chart version through an artifact.
// The artifact is fetched and packaged at plan, so the saved plan shows its
// digest and the release's per-object changes; the apply runs with an empty
// cache elsewhere (XDG_CACHE_HOME), fetches the archive again, and the next
// plans, from either cache, are empty. A version republished between plan
// and apply stops the apply before the release is touched.
func TestCLI_savedPlanOfAChartVersionBump(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
		ns := uniqueNamespace(t, "saved-plan-"+c.name)
		cacheA, cacheB := t.TempDir(), t.TempDir()
		w := newWorkspace(t, c, savedPlanConfig(repo.URL(), ns))
		w.env = []string{"XDG_CACHE_HOME=" + cacheA}
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions after install %v", got)
		}

		// Plan the bump with cache A, save it, look at what it says.
		if err := repo.PublishDir(podinfoSrc(), "1.1.0"); err != nil {
			t.Fatal(err)
		}
		out, code := w.run("plan", "-input=false", "-detailed-exitcode", "-out=bump.tfplan")
		if code != 2 {
			t.Fatalf("plan of the bump: exit %d, want 2\n%s", code, out)
		}
		planned := showPlan(t, w, "bump.tfplan")
		artifact := planned.after("stevedore_helmchart_artifact.podinfo")
		digest, _ := artifact["digest"].(string)
		if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) || artifact["chart_version"] != "1.1.0" {
			t.Fatalf("artifact planned digest %v chart_version %v, want both known", artifact["digest"], artifact["chart_version"])
		}
		rel := planned.after("stevedore_helmrelease.podinfo")
		if rel["chart_digest"] != digest || rel["chart_version"] != "1.1.0" {
			t.Fatalf("release planned chart_digest %v chart_version %v, want %s 1.1.0", rel["chart_digest"], rel["chart_version"], digest)
		}
		if changes, _ := json.Marshal(rel["changes"]); !strings.Contains(string(changes), `"path":"/metadata/labels/helm.sh~1chart","to":"\"podinfo-1.1.0\""`) {
			t.Fatalf("release planned changes do not set the chart label to podinfo-1.1.0: %s", changes)
		}

		// Apply it elsewhere: cache B is empty.
		w.env = []string{"XDG_CACHE_HOME=" + cacheB}
		w.must("apply", "-input=false", "bump.tfplan")
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:deployed"}) {
			t.Fatalf("revisions after the bump %v", got)
		}
		w.planEmpty()
		w.env = []string{"XDG_CACHE_HOME=" + cacheA}
		w.planEmpty()

		// Republished between plan and apply: 1.2.0 planned, then replaced by
		// other bytes under the same version.
		if err := repo.PublishDir(podinfoSrc(), "1.2.0"); err != nil {
			t.Fatal(err)
		}
		w.must("plan", "-input=false", "-out=republished.tfplan")
		other := filepath.Join(t.TempDir(), "podinfo")
		testenv.CopyDir(t, podinfoSrc(), other)
		f, err := os.OpenFile(filepath.Join(other, "values.yaml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, "# republished")
		f.Close()
		if err := repo.PublishDir(other, "1.2.0"); err != nil {
			t.Fatal(err)
		}
		w.env = []string{"XDG_CACHE_HOME=" + t.TempDir()}
		out, code = w.run("apply", "-input=false", "republished.tfplan")
		if code == 0 {
			t.Fatalf("apply of a plan whose chart was republished succeeded\n%s", out)
		}
		t.Logf("%s refused the apply of the republished chart:\n%s", c.name, out)
		if !strings.Contains(out, "stevedore_helmchart_artifact.podinfo") || !strings.Contains(out, "digest") {
			t.Fatalf("the apply's error does not name the artifact and its digest:\n%s", out)
		}
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:superseded", "2:deployed"}) {
			t.Fatalf("revisions after the refused apply %v, want the release untouched", got)
		}
		w.env = []string{"XDG_CACHE_HOME=" + cacheA}
		w.destroy()
	})
}

// plannedValues is `show -json` of a saved plan.
type plannedValues struct {
	t       *testing.T
	Changes []struct {
		Address string `json:"address"`
		Change  struct {
			After map[string]any `json:"after"`
		} `json:"change"`
	} `json:"resource_changes"`
}

func showPlan(t *testing.T, w *workspace, file string) *plannedValues {
	t.Helper()
	cmd, out := w.command(t.Context(), "show", "-json", file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s show -json: %v\n%s", w.cli.name, err, stderr.String())
	}
	p := &plannedValues{t: t}
	if err := json.Unmarshal(out.Bytes(), p); err != nil {
		t.Fatalf("%s show -json: %v", w.cli.name, err)
	}
	return p
}

// after is the planned value of addr.
func (p *plannedValues) after(addr string) map[string]any {
	p.t.Helper()
	for _, c := range p.Changes {
		if c.Address == addr {
			return c.Change.After
		}
	}
	p.t.Fatalf("%s is not in the plan", addr)
	return nil
}
