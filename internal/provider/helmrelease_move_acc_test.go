package provider

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// helmProviderTag is the hashicorp/helm release the migration tests install
// with (tools/helm-provider/build.sh builds it).
const helmProviderTag = "v3.1.2"

var (
	helmProviderOnce sync.Once
	helmProviderDir  string
	helmProviderErr  error
)

// helmProvider returns a directory holding terraform-provider-helm
// helmProviderTag, built by tools/helm-provider/build.sh into
// ${XDG_CACHE_HOME:-~/.cache}/stevedore-tools/helm-provider-<tag> (the script
// keeps a binary it built before, so only the first run builds, for minutes).
// When it cannot be built the test fails, saying why; under -short it skips.
func helmProvider(t testing.TB) string {
	t.Helper()
	dir, err := buildHelmProvider()
	if err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return dir
}

// buildHelmProvider is helmProvider's directory, built once per process.
func buildHelmProvider() (string, error) {
	helmProviderOnce.Do(func() {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				helmProviderErr = err
				return
			}
			cache = filepath.Join(home, ".cache")
		}
		dir := filepath.Join(cache, "stevedore-tools", "helm-provider-"+helmProviderTag)
		_, file, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(file), "..", "..", "tools", "helm-provider", "build.sh")
		cmd := exec.Command(script, dir)
		cmd.Env = testenv.LongLivedEnv(nil) // it runs the go command
		if os.Getenv("GOTOOLCHAIN") == "" {
			cmd.Env = append(cmd.Env, "GOTOOLCHAIN=go1.27.3")
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if _, err := cmd.Output(); err != nil {
			helmProviderErr = fmt.Errorf("tools/helm-provider/build.sh %s could not build hashicorp/helm %s "+
				"(it needs $HELM_PROVIDER_GIT, a git directory holding the tag, or GitHub, "+
				"and the Go module proxy): %v\n%s", dir, helmProviderTag, err, stderr.String())
			return
		}
		helmProviderDir = dir
	})
	return helmProviderDir, helmProviderErr
}

// helmWorkspace is a workspace whose CLI also takes hashicorp/helm from
// helmProvider.
func helmWorkspace(t *testing.T, c cli) *workspace {
	t.Helper()
	helmDir := helmProvider(t)
	w := newWorkspace(t, c, "")
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"stevedore-dev/stevedore\" = %q\n    \"hashicorp/helm\" = %q\n  }\n  direct {}\n}\n",
		builtProvider(t), helmDir)
	if err := os.WriteFile(w.rc, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// The values, sets and sensitive set both providers (and the template data
// source) are given, written the same way: a helm_release block converts by
// renaming.
const migratedValues = `
  values = [
    yamlencode({ replicaCount = 1, config = { greeting = "hello", level = "1" } }),
    "config:\n  extra: from-the-second-document\n",
  ]
  set = [
    { name = "config.level", value = "2" },
    { name = "config.tag", value = "007", type = "string" },
  ]
  set_list = [
    { name = "hosts", value = ["a.example.com", "b.example.com"] },
  ]
  set_sensitive = [
    { name = "config.password", value = "pa55-word-not-in-plans" },
  ]
`

// migratedDescription is the description both providers give the release.
const migratedDescription = `
  description = "web, installed by CI"
`

func helmReleaseBlock(t *testing.T, dir, ns, chartDir string) string {
	return helmProviderBlock(t, dir) + fmt.Sprintf(`
resource "helm_release" "web" {
  name      = "web"
  namespace = %q
  chart     = %s
%s%s
}
`, ns, hcl(chartDir), migratedDescription, migratedValues)
}

// helmProviderBlock configures hashicorp/helm for the test cluster, with its
// caches and configuration files in dir.
func helmProviderBlock(t *testing.T, dir string) string {
	return fmt.Sprintf(`
provider "helm" {
  kubernetes = { config_path = %s }
  repository_cache       = %s
  repository_config_path = %s
  registry_config_path   = %s
  plugins_path           = %s
}
`, hcl(testenv.Need(t).Cluster.Kubeconfig), hcl(filepath.Join(dir, "cache")), hcl(filepath.Join(dir, "repositories.yaml")),
		hcl(filepath.Join(dir, "registry.json")), hcl(filepath.Join(dir, "plugins")))
}

func stevedoreReleaseBlock(cacheDir, ns, chartDir, extra string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmrelease" "web" {
  name      = "web"
  namespace = %q
  chart {
    source_path = %s
  }
%s%s
}
%s
`, ns, hcl(chartDir), migratedDescription, migratedValues, extra)
}

// templateBlock renders the release's chart with the same values and sets,
// with stevedore_helm_template, into outputs beside the release's digest.
func templateBlock(ns, chartDir string) string {
	return fmt.Sprintf(`
data "stevedore_helm_template" "web" {
  release_name = "web"
  namespace    = %q
  chart {
    source_path = %s
  }
%s
}
output "template_manifest" {
  value     = data.stevedore_helm_template.web.manifest
  sensitive = true # set_sensitive's value is rendered into a ConfigMap
}
output "template_config_digest" {
  value = data.stevedore_helm_template.web.config_digest
}
output "release_config_digest" {
  value = stevedore_helmrelease.web.config_digest
}
`, ns, hcl(chartDir), migratedValues)
}

// noChangePlan fails unless out is the output of a plan that changes nothing
// (a move alone is no change) but the computed attributes in computedOnly.
func noChangePlan(t *testing.T, c cli, what, out string, computedOnly ...string) {
	t.Helper()
	if !regexp.MustCompile(`No changes\.|0 to add, 0 to change, 0 to destroy`).MatchString(out) {
		// OpenTofu lists every write-only attribute of a resource it updates
		// as `~ name = (write-only attribute)`, changed or not: not a change.
		changed := regexp.MustCompile(`(?m)^\s+[-+~] ([a-z_]+)\s+= (?:[^(\n].*|\([^w\n].*)?$`).FindAllStringSubmatch(out, -1)
		if !regexp.MustCompile(`0 to add, 1 to change, 0 to destroy`).MatchString(out) || len(changed) == 0 {
			t.Fatalf("%s: %s plan is not empty\n%s", c.name, what, out)
		}
		for _, m := range changed {
			if !slices.Contains(computedOnly, m[1]) {
				t.Fatalf("%s: %s plan changes %s, want no change but of %v\n%s", c.name, what, m[1], computedOnly, out)
			}
		}
	}
	if strings.Contains(out, "pa55-word-not-in-plans") {
		t.Fatalf("%s: %s plan shows the set_sensitive value\n%s", c.name, what, out)
	}
}

// TestAccHelmRelease_movedFromHelmRelease installs a release with
// hashicorp/helm v3's helm_release (a values list of two documents, set with
// both types, set_list and set_sensitive), then moves it with a `moved` block
// to a stevedore_helmrelease that says the same thing, block copied: the plan
// of the move changes nothing, its apply writes no Helm revision (the release
// stays at revision 1), the next plan is empty, and the sensitive value
// appears in no plan output. Both CLIs of the matrix move across types.
func TestAccHelmRelease_movedFromHelmRelease(t *testing.T) {
	needAcc(t)
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-moved-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		w := helmWorkspace(t, c)
		w.write(helmReleaseBlock(t, t.TempDir(), ns, chartDir))
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions after helm_release's install: %v", got)
		}
		checkDescription(t, ns, "web, installed by CI")

		cacheDir := t.TempDir()
		w.write(stevedoreReleaseBlock(cacheDir, ns, chartDir, `
moved {
  from = helm_release.web
  to   = stevedore_helmrelease.web
}
`))
		out, code := w.run("plan", "-input=false")
		if code != 0 {
			t.Fatalf("%s plan of the move: exit %d\n%s", c.name, code, out)
		}
		// The digest of the chart archive is unknown to helm_release: the
		// plan records it, and no upgrade follows (checked below).
		noChangePlan(t, c, "the move's", out, "chart_digest")
		if !strings.Contains(out, "moved from helm_release.web") {
			t.Fatalf("%s: the plan does not show the move\n%s", c.name, out)
		}
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions after the move's apply: %v, want the release untouched at 1", got)
		}
		checkDescription(t, ns, "web, installed by CI")
		w.planEmpty()
		state := w.must("show", "-json")
		if !strings.Contains(state, `"stevedore_helmrelease"`) || strings.Contains(state, `"helm_release"`) {
			t.Fatalf("state after the move:\n%s", state)
		}
		if why, err := c.lacks(cliIdentity); err != nil {
			t.Fatal(err)
		} else if why == "" {
			// The identity the state keeps is helm_release's, and the same
			// as stevedore's for the release: {namespace, release_name}.
			raw, err := os.ReadFile(filepath.Join(w.dir, "terraform.tfstate"))
			if err != nil {
				t.Fatal(err)
			}
			var st struct {
				Resources []struct {
					Type      string `json:"type"`
					Instances []struct {
						Identity map[string]any `json:"identity"`
					} `json:"instances"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"namespace": ns, "release_name": "web"}
			if len(st.Resources) != 1 || st.Resources[0].Type != "stevedore_helmrelease" || len(st.Resources[0].Instances) != 1 ||
				!maps.Equal(st.Resources[0].Instances[0].Identity, want) {
				t.Fatalf("%s: state after the move, want one stevedore_helmrelease with identity %v:\n%s", c.name, want, raw)
			}
		}
		// stevedore_helm_template renders the values and sets as the release
		// composes them (the same config_digest), and the chart with them as
		// helm_release's install did: its manifest is the release's, then the
		// hooks. Reading it changes nothing of the release.
		w.write(stevedoreReleaseBlock(cacheDir, ns, chartDir, templateBlock(ns, chartDir)))
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions after reading the template: %v, want the release untouched at 1", got)
		}
		if got, want := w.must("output", "-raw", "template_config_digest"), w.must("output", "-raw", "release_config_digest"); got != want || got == "" {
			t.Fatalf("%s: the template's config_digest %q is not the release's, %q", c.name, got, want)
		}
		manifest, err := testenv.ReleaseManifest(testenv.Need(t).Cluster.Kubeconfig, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		// The release was rendered by helm_release's Helm 3, the template by
		// Helm 4, which keeps each document's trailing blank lines where Helm
		// 3 trimmed them: the same documents, in the same order.
		if got := w.must("output", "-raw", "template_manifest"); !strings.HasPrefix(trimDocuments(got), trimDocuments(manifest)+"\n---\n# Source: podinfo/templates/tests/") {
			t.Fatalf("%s: the template's manifest is not the release's\n--- template:\n%s\n--- release:\n%s", c.name, got, manifest)
		}
		// A new description upgrades the release, as it does a helm_release:
		// no digest changes, the plan shows the attribute and an upgrade.
		w.write(strings.Replace(stevedoreReleaseBlock(cacheDir, ns, chartDir, ""), "web, installed by CI", "web, described anew", 1))
		out = w.must("plan", "-input=false")
		if !strings.Contains(out, `~ description`) || !strings.Contains(out, "1 to change") ||
			!regexp.MustCompile(`~ version\s+= 1 -> \(known after apply\)`).MatchString(out) {
			t.Fatalf("%s: the plan of a new description does not upgrade the release\n%s", c.name, out)
		}
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:superseded", "2:deployed"}) {
			t.Fatalf("revisions after a new description: %v, want an upgrade to 2", got)
		}
		checkDescription(t, ns, "web, described anew")
		w.planEmpty()
		w.destroy()
		if got, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "web"); err == nil && len(got) != 0 {
			t.Fatalf("revisions after destroy: %v, want the release uninstalled", got)
		}
	})
}

// checkDescription fails unless the latest revision of release web in ns
// has Helm description want.
func checkDescription(t *testing.T, ns, want string) {
	t.Helper()
	got, err := testenv.ReleaseDescription(testenv.Need(t).Cluster.Kubeconfig, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("release %s/web described %q, want %q", ns, got, want)
	}
}

// TestAccHelmRelease_importFromHelmRelease is the documented path where a
// CLI cannot move across types: a `removed` block (under OpenTofu) or
// `state rm` (under Terraform) of the helm_release, and an import block with
// the same stevedore configuration. The import's apply
// writes no Helm revision and the next plan is empty.
//
// The import's own plan shows the release's values (an import reconstructs
// them into `values`), the set_sensitive value among them: the guide says so.
func TestAccHelmRelease_importFromHelmRelease(t *testing.T) {
	needAcc(t)
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-mvimp-"+c.name)
		chartDir := chartCopy(t, "1.0.0")
		w := helmWorkspace(t, c)
		w.write(helmReleaseBlock(t, t.TempDir(), ns, chartDir))
		w.must("apply", "-auto-approve", "-input=false")
		// Under OpenTofu the guide's example as it is: a `removed` block
		// that keeps the release, beside the import block, in one apply.
		// Under Terraform the other path the guide gives, `state rm`.
		forget := ""
		if c.product == "opentofu" {
			forget = `
removed {
  from = helm_release.web
  lifecycle {
    destroy = false
  }
}
`
		} else {
			w.must("state", "rm", "helm_release.web")
		}
		w.write(stevedoreReleaseBlock(t.TempDir(), ns, chartDir, forget+fmt.Sprintf(`
import {
  to = stevedore_helmrelease.web
  id = "%s/web"
}
`, ns)))
		// The import reads the release's values into `values` (as every
		// import does), so its one plan shows them going to the
		// configuration's documents and sets, set_sensitive's value
		// included: the guide says so, and that `moved` has no such plan.
		w.must("apply", "-auto-approve", "-input=false")
		if got := releaseRevisions(t, ns, "web"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions after the import's apply: %v, want the release untouched at 1", got)
		}
		if got := strings.Fields(w.must("state", "list")); !slices.Equal(got, []string{"stevedore_helmrelease.web"}) {
			t.Fatalf("%s: state after the import's apply holds %v, want stevedore_helmrelease.web alone", c.name, got)
		}
		w.planEmpty()
		w.destroy()
	})
}

// trimDocuments is a manifest with the whitespace around each of its
// documents trimmed, as Helm 3 wrote a release's manifest.
func trimDocuments(manifest string) string {
	docs := strings.Split(strings.TrimSpace(manifest), "\n---\n")
	for i, d := range docs {
		docs[i] = strings.TrimSpace(d)
	}
	return strings.Join(docs, "\n---\n")
}
