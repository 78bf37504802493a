package provider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The tests of issue 33: the chart a release installs is the one its source
// serves. The artifact cache is shared by every configuration on a machine
// (the provider's cache_dir defaults to $XDG_CACHE_HOME/stevedore), and two
// sources may serve different archives under one chart name and version.

// sharedChartDir writes a chart `shared` 0.1.0 whose one template is a
// ConfigMap `<release>-from-<marker>`, and returns its directory.
func sharedChartDir(t *testing.T, marker string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shared")
	for name, data := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: shared\nversion: 0.1.0\n",
		"values.yaml":       "greeting: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-from-" + marker + "\ndata:\n  from: " + marker + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sharedChartPackage packages sharedChartDir(marker) and returns the
// archive's path and digest.
func sharedChartPackage(t *testing.T, marker string) (string, string) {
	t.Helper()
	p, err := testenv.PackageChart(sharedChartDir(t, marker), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return p, "sha256:" + hex.EncodeToString(sum[:])
}

// landedFrom checks that the release's ConfigMap in ns comes from marker's
// chart, and that no ConfigMap of the release comes from any of others'.
func landedFrom(t *testing.T, ns, release, marker string, others ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := testClient(t)
		var cm corev1.ConfigMap
		name := release + "-from-" + marker
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
			return fmt.Errorf("release %s: ConfigMap %s/%s of its own source: %w", release, ns, name, err)
		}
		if cm.Data["from"] != marker {
			return fmt.Errorf("ConfigMap %s/%s says it is from %q", ns, name, cm.Data["from"])
		}
		for _, o := range others {
			wrong := release + "-from-" + o
			err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: wrong}, &corev1.ConfigMap{})
			if err == nil {
				return fmt.Errorf("release %s installed the chart of %s: ConfigMap %s/%s exists", release, o, ns, wrong)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
}

// inlineRelease is a release `name` of an inline chart whose block holds
// chartBody.
func inlineRelease(name, ns, chartBody string) string {
	return fmt.Sprintf(`
resource "stevedore_helmrelease" %[1]q {
  name      = %[1]q
  namespace = %[2]q
  chart {
%[3]s
  }
}
`, name, ns, chartBody)
}

// twoSourcesCase is the reproduction of issue 33 for one kind of source:
// configuration 1 installs rel1 from source 1; then, with the same cache,
// rel2 from source 2, which has the same chart name and version. Each
// release's objects come from its own source, and its chart_digest is its
// source's archive.
func twoSourcesCase(t *testing.T, cacheDir, ns string, chart1, chart2 string, digest1, digest2 string) resource.TestCase {
	provider := providerBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir)))
	digestCheck := func(addr, want string) statecheck.StateCheck {
		if want == "" {
			return statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)))
		}
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New("chart_digest"), knownvalue.StringExact(want))
	}
	return resource.TestCase{
		Steps: []resource.TestStep{
			{
				Config:            provider + inlineRelease("rel1", ns, chart1),
				ConfigStateChecks: []statecheck.StateCheck{digestCheck("stevedore_helmrelease.rel1", digest1)},
				Check:             landedFrom(t, ns, "rel1", "chart1", "chart2"),
			},
			{
				Config: provider + inlineRelease("rel1", ns, chart1) + inlineRelease("rel2", ns, chart2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("stevedore_helmrelease.rel1", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("stevedore_helmrelease.rel2", plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					digestCheck("stevedore_helmrelease.rel1", digest1),
					digestCheck("stevedore_helmrelease.rel2", digest2),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					landedFrom(t, ns, "rel1", "chart1", "chart2"),
					landedFrom(t, ns, "rel2", "chart2", "chart1"),
					differentDigests("stevedore_helmrelease.rel1", "stevedore_helmrelease.rel2"),
				),
			},
		},
	}
}

// differentDigests checks that two releases record different chart digests.
func differentDigests(a, b string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ra, rb := s.RootModule().Resources[a], s.RootModule().Resources[b]
		if ra == nil || rb == nil {
			return fmt.Errorf("%s or %s not in state", a, b)
		}
		da, db := ra.Primary.Attributes["chart_digest"], rb.Primary.Attributes["chart_digest"]
		if da == "" || da == db {
			return fmt.Errorf("%s and %s both record chart digest %q", a, b, da)
		}
		return nil
	}
}

// TestAccHelmRelease_cacheIdentityLocalDirectories: two chart directories,
// both `shared` 0.1.0 with different templates. Before the fix the second
// release installed the first directory's templates (ConfigMap
// rel2-from-chart1).
func TestAccHelmRelease_cacheIdentityLocalDirectories(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-dir")
		dir1, dir2 := sharedChartDir(t, "chart1"), sharedChartDir(t, "chart2")
		return twoSourcesCase(t, t.TempDir(), ns, "source_path = "+hcl(dir1), "source_path = "+hcl(dir2), "", "")
	})
}

// TestAccHelmRelease_cacheIdentityHTTPRepositories: two Helm repositories
// serve different archives of `shared` 0.1.0. Before the fix a release of
// repository 2 installed repository 1's archive when that was fetched first.
func TestAccHelmRelease_cacheIdentityHTTPRepositories(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-http")
		var urls, digests []string
		for _, m := range []string{"chart1", "chart2"} {
			r := startTestRepo(t, testenv.HelmRepoOptions{})
			p, d := sharedChartPackage(t, m)
			if err := r.Publish(p); err != nil {
				t.Fatal(err)
			}
			urls, digests = append(urls, r.URL()), append(digests, d)
		}
		src := func(u string) string {
			return fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(u))
		}
		return twoSourcesCase(t, t.TempDir(), ns, src(urls[0]), src(urls[1]), digests[0], digests[1])
	})
}

// TestAccHelmRelease_cacheIdentityOCIRegistries: the same with two OCI
// registries.
func TestAccHelmRelease_cacheIdentityOCIRegistries(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-oci")
		var urls, digests []string
		for _, m := range []string{"chart1", "chart2"} {
			reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(reg.Close)
			p, d := sharedChartPackage(t, m)
			if _, _, err := reg.PushChart(p, "charts"); err != nil {
				t.Fatal(err)
			}
			urls, digests = append(urls, reg.URL()+"/charts"), append(digests, d)
		}
		src := func(u string) string {
			return fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(u))
		}
		return twoSourcesCase(t, t.TempDir(), ns, src(urls[0]), src(urls[1]), digests[0], digests[1])
	})
}

// TestAccHelmRelease_cacheIdentityIndexDigestMismatch: an archive whose
// sha256 is not the digest its repository's index gives is a plan error
// naming the repository, chart, version and both digests: fetched (a mirror
// serving other bytes) and cached (the index changed its digest since the
// archive was cached, the server still serving the old bytes). Nothing is
// installed from it.
func TestAccHelmRelease_cacheIdentityIndexDigestMismatch(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-digest")
		cacheDir := t.TempDir()
		r := startTestRepo(t, testenv.HelmRepoOptions{})
		goodPath, good := sharedChartPackage(t, "chart1")
		evilPath, evil := sharedChartPackage(t, "chart2")
		read := func(p string) []byte {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		if err := r.Publish(goodPath); err != nil {
			t.Fatal(err)
		}
		config := providerBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir))) +
			inlineRelease("rel1", ns, fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(r.URL())))
		mismatch := func(index, served string) *regexp.Regexp {
			return regexp.MustCompile(`(?s)repository\s+` + regexp.QuoteMeta(r.URL()) + `,\s+chart\s+'shared'\s+version\s+'0\.1\.0':\s+the\s+index\s+gives\s+digest\s+` +
				regexp.QuoteMeta(index) + `.*has\s+digest\s+` + regexp.QuoteMeta(served) + `:\s+refusing\s+it`)
		}
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					// Fetched: the server's archive is not the index's.
					PreConfig:   func() { r.ServeArchive("shared", "0.1.0", read(evilPath)) },
					Config:      config,
					PlanOnly:    true,
					ExpectError: mismatch(good, evil),
				},
				{
					PreConfig:         func() { r.ServeArchive("shared", "0.1.0", read(goodPath)) },
					Config:            config,
					ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue("stevedore_helmrelease.rel1", tfjsonpath.New("chart_digest"), knownvalue.StringExact(good))},
					Check:             landedFrom(t, ns, "rel1", "chart1", "chart2"),
				},
				{
					// Cached: the index now gives chart2's digest; the
					// cached archive (chart1's) is not used, and the
					// server's bytes (chart1's still) are refused.
					PreConfig: func() {
						if err := r.Publish(evilPath); err != nil {
							t.Error(err)
						}
						r.ServeArchive("shared", "0.1.0", read(goodPath))
					},
					Config:      config,
					PlanOnly:    true,
					ExpectError: mismatch(evil, good),
				},
			},
		}
	})
}

// TestAccHelmRelease_cacheIdentityVerify: a release with verify whose chart
// an unverified configuration put in the cache is verified: refused while
// the chart has no signature (before the fix the cached archive was
// installed unverified), installed once it is signed.
func TestAccHelmRelease_cacheIdentityVerify(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-verify")
		cacheDir := t.TempDir()
		reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(reg.Close)
		p, _ := sharedChartPackage(t, "chart1")
		_, manifest, err := reg.PushChart(p, "charts")
		if err != nil {
			t.Fatal(err)
		}
		key, err := charttest.NewKeyPair()
		if err != nil {
			t.Fatal(err)
		}
		provider := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))
		src := fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(reg.URL()+"/charts"))
		verified := src + fmt.Sprintf("\nverify {\nprovider = \"cosign\"\npublic_keys = [%s]\n}", hcl(string(key.PublicPEM)))
		unverified := provider + inlineRelease("plain", ns, src)
		both := unverified + inlineRelease("checked", ns, verified)
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					// An unverified configuration puts the archive in the cache.
					Config: unverified,
					Check:  landedFrom(t, ns, "plain", "chart1"),
				},
				{
					Config:      both,
					ExpectError: regexp.MustCompile(`no\s+matching\s+signatures\s+were\s+found`),
				},
				{
					PreConfig: func() {
						if err := key.SignWithAuth(reg.Host()+"/charts/shared@"+manifest, "", ""); err != nil {
							t.Error(err)
						}
					},
					Config: both,
					Check:  landedFrom(t, ns, "checked", "chart1"),
				},
			},
		}
	})
}

// TestAccHelmRelease_cacheIdentitySharedCacheParallel: two configurations
// share one XDG_CACHE_HOME (the provider's default cache directory) and run
// at the same time, under both CLIs: each installs `shared` 0.1.0 from its
// own directory, Helm repository and OCI registry, and each release's
// objects come from its own source. Before the fix every test had a cache of
// its own, which is why none saw the bug.
func TestAccHelmRelease_cacheIdentitySharedCacheParallel(t *testing.T) {
	// Not parallel itself: it sets XDG_CACHE_HOME for the process, and its
	// subtests run in parallel with one another only (the package's
	// parallel tests start after the serial ones are done).
	needAcc(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, cfg := range []string{"chart1", "chart2"} {
		t.Run(cfg, func(t *testing.T) {
			t.Parallel()
			accTestEach(t, func(t *testing.T) resource.TestCase {
				ns := uniqueNamespace(t, "hr-id-shared")
				others := []string{"chart1", "chart2"}
				others = slicesWithout(others, cfg)
				r := startTestRepo(t, testenv.HelmRepoOptions{})
				p, d := sharedChartPackage(t, cfg)
				if err := r.Publish(p); err != nil {
					t.Fatal(err)
				}
				reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(reg.Close)
				if _, _, err := reg.PushChart(p, "charts"); err != nil {
					t.Fatal(err)
				}
				// No cache_dir: the default, under XDG_CACHE_HOME.
				config := providerBlock("") +
					inlineRelease("dir", ns, "source_path = "+hcl(sharedChartDir(t, cfg))) +
					inlineRelease("http", ns, fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(r.URL()))) +
					inlineRelease("oci", ns, fmt.Sprintf("repository = %s\nchart = \"shared\"\nversion = \"0.1.0\"", hcl(reg.URL()+"/charts")))
				return resource.TestCase{
					Steps: []resource.TestStep{{
						Config: config,
						ConfigStateChecks: []statecheck.StateCheck{
							statecheck.ExpectKnownValue("stevedore_helmrelease.http", tfjsonpath.New("chart_digest"), knownvalue.StringExact(d)),
							statecheck.ExpectKnownValue("stevedore_helmrelease.oci", tfjsonpath.New("chart_digest"), knownvalue.StringExact(d)),
						},
						Check: resource.ComposeAggregateTestCheckFunc(
							landedFrom(t, ns, "dir", cfg, others...),
							landedFrom(t, ns, "http", cfg, others...),
							landedFrom(t, ns, "oci", cfg, others...),
							inCacheUnder(os.Getenv("XDG_CACHE_HOME"), "stevedore_helmrelease.http"),
						),
					}},
				}
			})
		})
	}
}

func slicesWithout(all []string, drop string) []string {
	var out []string
	for _, s := range all {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// inCacheUnder checks that addr's chart archive is in the stevedore cache
// under the XDG cache home xdg: the configurations really share it.
func inCacheUnder(xdg, addr string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[addr]
		if rs == nil {
			return fmt.Errorf("%s not in state", addr)
		}
		h := strings.TrimPrefix(rs.Primary.Attributes["chart_digest"], "sha256:")
		if len(h) != 64 {
			return fmt.Errorf("%s: chart_digest %q", addr, rs.Primary.Attributes["chart_digest"])
		}
		dir := filepath.Join(xdg, "stevedore", "artifacts", h[:2], h)
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s: archive not in the shared cache: %w", addr, err)
		}
		return nil
	}
}

// TestAccHelmRelease_cacheIdentityImportProves: import names a cached
// archive only when its files are those Helm recorded in the release. The
// cache holds directory 1's `shared` 0.1.0. A release installed from that
// archive is imported with its digest; a release installed from directory
// 2's archive (same name and version, not in the cache) is imported with
// none (before the fix it was given directory 1's digest).
func TestAccHelmRelease_cacheIdentityImportProves(t *testing.T) {
	t.Parallel()
	accTestEach(t, func(t *testing.T) resource.TestCase {
		ns := uniqueNamespace(t, "hr-id-import")
		cacheDir := t.TempDir()
		dir1 := sharedChartDir(t, "chart1")
		other, _ := sharedChartPackage(t, "chart2")
		artifact := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "one" {
  source_path = %s
}
`, hcl(dir1))
		imports := artifact + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.same
  id = "%[1]s/same"
}

import {
  to = stevedore_helmrelease.other
  id = "%[1]s/other"
}
`, ns) + inlineRelease("same", ns, "source_path = "+hcl(dir1)) + inlineRelease("other", ns, "source_path = "+hcl(dir1))
		var digest1 string
		return resource.TestCase{
			Steps: []resource.TestStep{
				{
					Config: artifact,
					Check: func(s *terraform.State) error {
						kubeconfig := testenv.Need(t).Cluster.Kubeconfig
						attrs := s.RootModule().Resources["stevedore_helmchart_artifact.one"].Primary.Attributes
						path := attrs["path"]
						digest1 = attrs["digest"]
						if err := testenv.HelmInstall(kubeconfig, ns, "same", path, nil); err != nil {
							return err
						}
						return testenv.HelmInstall(kubeconfig, ns, "other", other, nil)
					},
				},
				{
					Config: imports,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						// What the import named: directory 1's archive for the
						// release made from it; for the other, none (not
						// directory 1's, which has its name and version): an empty digest.
						expectImported("stevedore_helmrelease.same", "chart_digest", func() any { return digest1 }),
						expectImported("stevedore_helmrelease.other", "chart_digest", func() any { return "" }),
					}},
					// The first plan compares the chart Helm stored with the
					// configured one: no Helm revision for the release made
					// from it; an upgrade for the other, whose chart has the
					// configured chart's name and version but not its files.
					Check: resource.ComposeAggregateTestCheckFunc(
						checkRevisions(t, ns, "same", "1:deployed"),
						landedFrom(t, ns, "same", "chart1", "chart2"),
						checkRevisions(t, ns, "other", "1:superseded", "2:deployed"),
						landedFrom(t, ns, "other", "chart1", "chart2"),
					),
					ConfigStateChecks: []statecheck.StateCheck{
						statecheck.CompareValuePairs("stevedore_helmrelease.same", tfjsonpath.New("chart_digest"),
							"stevedore_helmchart_artifact.one", tfjsonpath.New("digest"), compareEqual{}),
					},
				},
			},
		}
	})
}

type compareEqual struct{}

func (compareEqual) CompareValues(values ...any) error {
	if len(values) != 2 || fmt.Sprint(values[0]) != fmt.Sprint(values[1]) {
		return fmt.Errorf("values differ: %v", values)
	}
	return nil
}

// expectImported checks the value of attr that import (and the refresh after
// it) gave the resource addr, as the plan shows it before its changes.
func expectImported(addr, attr string, want func() any) plancheck.PlanCheck {
	return importedCheck{addr: addr, attr: attr, want: want}
}

type importedCheck struct {
	addr, attr string
	want       func() any
}

func (c importedCheck) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		if rc.Change == nil || rc.Change.Importing == nil {
			resp.Error = fmt.Errorf("%s is not imported by this plan", c.addr)
			return
		}
		before, _ := rc.Change.Before.(map[string]any)
		want := c.want()
		if got := before[c.attr]; fmt.Sprint(got) != fmt.Sprint(want) || (want == nil) != (got == nil) {
			resp.Error = fmt.Errorf("%s imported with %s = %v, want %v", c.addr, c.attr, got, want)
		}
		return
	}
	resp.Error = fmt.Errorf("%s not in the plan", c.addr)
}
