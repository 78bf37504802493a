package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/chart/charttest"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

const artifactAddr = "stevedore_helmchart_artifact.podinfo"

// artifactAccTest runs one acceptance case of stevedore_helmchart_artifact
// under every CLI, each as a subtest. The artifact needs no cluster (its
// sources are the in-process Helm repository and OCI registry of testenv, and
// directories on disk), so these cases run without one, regardless of TF_ACC:
// under `make unit` (-short) as well as `make test`, once in each. They need
// the CLIs `make tools` builds: without them they are skipped under -short and
// fail otherwise, as every acceptance case does.
func artifactAccTest(t *testing.T, tc resource.TestCase) {
	t.Helper()
	// UnitTest: runs without TF_ACC; nothing here leaves the machine.
	underCLIs(t, nil, tc, true, func(t *testing.T, tc resource.TestCase) { resource.UnitTest(t, tc) })
}

// artifactProviderBlock configures the provider without a cluster: the
// artifact resource never talks to one.
func artifactProviderBlock(extra string) string {
	return fmt.Sprintf(`
provider "stevedore" {
  %s
}
`, extra)
}

func podinfoSrc() string { return filepath.Join(testenv.ChartsDir(), "podinfo") }

func startTestRepo(t testing.TB, opts testenv.HelmRepoOptions, versions ...string) *testenv.HelmRepo {
	t.Helper()
	r, err := testenv.StartHelmRepo(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	for _, v := range versions {
		if err := r.PublishDir(podinfoSrc(), v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// hcl quotes s for a configuration, heredoc-free.
func hcl(s string) string { return strconv.Quote(s) }

// artifactFileMatches checks that the state's path holds bytes with the
// state's digest and size, and that url is the file URL of path.
func artifactFileMatches(addr string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s not in state", addr)
		}
		a := rs.Primary.Attributes
		data, err := os.ReadFile(a["path"])
		if err != nil {
			return fmt.Errorf("artifact file: %w", err)
		}
		sum := sha256.Sum256(data)
		if want := "sha256:" + hex.EncodeToString(sum[:]); a["digest"] != want {
			return fmt.Errorf("digest %s, file has %s", a["digest"], want)
		}
		if a["size"] != strconv.Itoa(len(data)) {
			return fmt.Errorf("size %s, file has %d bytes", a["size"], len(data))
		}
		if a["url"] != "file://"+a["path"] {
			return fmt.Errorf("url %s for path %s", a["url"], a["path"])
		}
		if want := a["chart_name"] + "-" + a["revision"] + ".tgz"; filepath.Base(a["path"]) != want {
			return fmt.Errorf("file name %s, want %s", filepath.Base(a["path"]), want)
		}
		return nil
	}
}

// artifactInCache checks that the archive of addr's digest is in the cache
// directory dir, where this machine finds it by digest (chart.Engine.Locate),
// whatever path the state recorded.
func artifactInCache(addr, dir string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s not in state", addr)
		}
		a := rs.Primary.Attributes
		h := strings.TrimPrefix(a["digest"], "sha256:")
		if len(h) != 64 {
			return fmt.Errorf("digest %q", a["digest"])
		}
		p := filepath.Join(dir, "artifacts", h[:2], h, filepath.Base(a["path"]))
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("archive of %s in %s: %w", a["digest"], dir, err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != h {
			return fmt.Errorf("%s does not have digest %s", p, a["digest"])
		}
		return nil
	}
}

// dynamic is a value a PreConfig sets and a later check compares with.
type dynamic struct{ v atomic.Value }

func (d *dynamic) set(s string) { d.v.Store(s) }
func (d *dynamic) get() string  { s, _ := d.v.Load().(string); return s }
func (d *dynamic) check() knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error {
		if v != d.get() {
			return fmt.Errorf("got %q, want %q", v, d.get())
		}
		return nil
	})
}

// TestAccHelmChartArtifact_httpRepository runs against a repository with
// basic auth and TLS: the constraint resolves to the highest version in
// range; a version published later shows in the next plan as exactly that
// chart_version (known) with the artifact unknown, and apply fetches it; a
// second plan within the TTL sends no request at all; deleting the cache
// gives an empty plan and the file back after refresh.
func TestAccHelmChartArtifact_httpRepository(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{Username: "stevedore", Password: "s3cret", TLS: true}, "1.0.0", "1.1.0", "2.0.0", "1.9.0-rc.1")
	cacheDir := t.TempDir()
	var patch atomic.Int32
	want := &dynamic{}
	publishNext := func() {
		v := fmt.Sprintf("1.2.%d", patch.Add(1))
		if err := repo.PublishDir(podinfoSrc(), v); err != nil {
			t.Error(err)
		}
		want.set(v)
	}
	config := func(ttl string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = %q", hcl(cacheDir), ttl)) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
  username   = "stevedore"
  password   = "s3cret"
  ca_pem     = %s
}
`, hcl(repo.URL()), hcl(string(repo.CAPEM())))
	}

	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					os.RemoveAll(cacheDir)
					publishNext()
				},
				Config: config("0s"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					plancheck.ExpectUnknownValue(artifactAddr, tfjsonpath.New("path")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), want.check()),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("podinfo")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("observed_values_files"), knownvalue.ListExact(nil)),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("source_revision"), knownvalue.Null()),
				},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				// A new version in range: the plan shows exactly it.
				PreConfig: publishNext,
				Config:    config("0s"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), want.check()),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
					plancheck.ExpectUnknownValue(artifactAddr, tfjsonpath.New("path")),
					plancheck.ExpectUnknownValue(artifactAddr, tfjsonpath.New("url")),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("size"), knownvalue.NotNull()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
				},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				// Within the TTL: not one request, for plan, apply and refresh,
				// even though a newer version exists by now.
				PreConfig: func() {
					repo.ResetCounters()
					publishNext()
				},
				Config: config("5m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: func(*terraform.State) error {
					if n := repo.Requests(); n != 0 {
						return fmt.Errorf("%d requests to the repository within the TTL, want 0", n)
					}
					return nil
				},
			},
			{
				// The artifact is gone from the cache: refresh fetches the same
				// bytes again, the plan is empty.
				PreConfig: func() { os.RemoveAll(filepath.Join(cacheDir, "artifacts")) },
				Config:    config("5m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				// A fresh runner, no cache at all: the index is fetched again and
				// shows the version published meanwhile.
				PreConfig: func() { os.RemoveAll(cacheDir) },
				Config:    config("5m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
				}},
				Check: artifactFileMatches(artifactAddr),
			},
		},
	})
}

// TestAccHelmChartArtifact_valuesFilesDeterministic packages values files
// into the chart: the same digest from two cache directories (two provider
// configurations), and again after the cache is deleted (an empty plan, the
// file back after refresh).
func TestAccHelmChartArtifact_valuesFilesDeterministic(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0")
	cacheA, cacheB := t.TempDir(), t.TempDir()
	config := func(cacheDir string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository   = %s
  chart        = "podinfo"
  version      = "1.0.0"
  values_files = ["values.yaml", "values-prod.yaml"]
}
`, hcl(repo.URL()))
	}
	revision := regexp.MustCompile(`^1\.0\.0\+[0-9a-f]{12}$`)
	var digest string
	inCache := func(dir string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			a := s.RootModule().Resources[artifactAddr].Primary.Attributes
			if !strings.HasPrefix(a["path"], dir+string(filepath.Separator)) {
				return fmt.Errorf("path %s is not in %s", a["path"], dir)
			}
			if digest == "" {
				digest = a["digest"]
			} else if a["digest"] != digest {
				return fmt.Errorf("digest %s, first build had %s", a["digest"], digest)
			}
			return nil
		}
	}
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.RemoveAll(cacheA); os.RemoveAll(cacheB); digest = "" },
				Config:    config(cacheA),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringRegexp(revision)),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.0.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("observed_values_files"),
						knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("values.yaml"), knownvalue.StringExact("values-prod.yaml")})),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					inCache(cacheA),
					func(s *terraform.State) error {
						a := s.RootModule().Resources[artifactAddr].Primary.Attributes
						data, err := os.ReadFile(a["path"])
						if err != nil {
							return err
						}
						ch, err := loader.LoadArchive(bytes.NewReader(data))
						if err != nil {
							return err
						}
						if fmt.Sprint(ch.Values["replicaCount"]) != "2" || ch.Metadata.Version != a["revision"] {
							return fmt.Errorf("packaged replicaCount %v version %s", ch.Values["replicaCount"], ch.Metadata.Version)
						}
						return nil
					},
				),
			},
			{
				// Another cache directory, the first one gone (another
				// machine): the refresh packages the chart again with the same
				// digest into this cache, so the plan is empty. The recorded
				// path stays the first machine's: a release finds the archive
				// by digest.
				PreConfig: func() { os.RemoveAll(cacheA) },
				Config:    config(cacheB),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(inCache(cacheA), artifactInCache(artifactAddr, cacheB)),
			},
			{
				PreConfig: func() { os.RemoveAll(cacheB) },
				Config:    config(cacheB),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(inCache(cacheA), artifactInCache(artifactAddr, cacheB)),
			},
		},
	})
}

// TestAccHelmChartArtifact_ociCosign pulls from an OCI registry with the
// provider-level credentials: a chart signed with key A verifies with
// [B, A] and fails the plan with [B], leaving the state as it was.
func TestAccHelmChartArtifact_ociCosign(t *testing.T) {
	t.Parallel()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{Username: "oci-user", Password: "oci-pass"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	var signedDigest string
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		tgz, err := testenv.PackageChart(podinfoSrc(), v, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, d, err := reg.PushChart(tgz, "charts")
		if err != nil {
			t.Fatal(err)
		}
		if v == "1.1.0" {
			signedDigest = d
		}
	}
	keyA, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := charttest.NewKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if err := keyA.SignWithAuth(reg.Host()+"/charts/podinfo@"+signedDigest, "oci-user", "oci-pass"); err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	config := func(keys ...string) string {
		return artifactProviderBlock(fmt.Sprintf(`
  cache_dir = %s
  registries = [{
    url      = %s
    username = "oci-user"
    password = "oci-pass"
  }]`, hcl(cacheDir), hcl(reg.URL()))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
  verify {
    provider    = "cosign"
    public_keys = [%s]
  }
}
`, hcl(reg.URL()+"/charts"), strings.Join(keys, ", "))
	}
	a, b := hcl(string(keyA.PublicPEM)), hcl(string(keyB.PublicPEM))
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.RemoveAll(cacheDir) },
				Config:    config(b, a),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(true)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("1.1.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(true)),
				},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				// A cosign failure is a plan error: the plan alone fails.
				Config:      config(b),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`no matching signatures\s+were\s+found`),
			},
			{
				// The failed plan left the state as it was.
				Config: config(b, a),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: artifactFileMatches(artifactAddr),
			},
		},
	})
}

// TestAccHelmChartArtifact_localDirectory builds a chart directory with a
// file:// dependency, with the Revision strategy: a change to the source
// shows in the plan as a new revision.
func TestAccHelmChartArtifact_localDirectory(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	testenv.CopyDir(t, testenv.ChartsDir(), src)
	dir := filepath.Join(src, "withdep")
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path        = %s
  reconcile_strategy = "Revision"
}
`, hcl(dir))
	var firstRevision string
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.Remove(filepath.Join(src, "podinfo", "templates", "extra.yaml")) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringRegexp(regexp.MustCompile(`^0\.1\.0\+[0-9a-f]{12}$`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("withdep")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), knownvalue.StringExact("0.1.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("source_revision"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					func(s *terraform.State) error {
						attrs := s.RootModule().Resources[artifactAddr].Primary.Attributes
						firstRevision = attrs["revision"]
						if want := "0.1.0+" + strings.TrimPrefix(attrs["source_revision"], "sha256:")[:12]; firstRevision != want {
							return fmt.Errorf("revision %s, want %s", firstRevision, want)
						}
						data, err := os.ReadFile(attrs["path"])
						if err != nil {
							return err
						}
						ch, err := loader.LoadArchive(bytes.NewReader(data))
						if err != nil {
							return err
						}
						deps := ch.Dependencies()
						if len(deps) != 1 || deps[0].Name() != "podinfo" || deps[0].Metadata.Version != "1.0.0" {
							return fmt.Errorf("dependencies %v, want podinfo 1.0.0 built into charts/", deps)
						}
						return nil
					},
				),
			},
			{
				// The dependency's source changes: a new revision, known at plan.
				PreConfig: func() {
					if err := os.WriteFile(filepath.Join(src, "podinfo", "templates", "extra.yaml"), []byte("# extra\n"), 0o644); err != nil {
						t.Error(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringFunc(func(v string) error {
						if v == firstRevision {
							return fmt.Errorf("revision %s unchanged", v)
						}
						return nil
					})),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				}},
				Check: artifactFileMatches(artifactAddr),
			},
		},
	})
}

// TestAccHelmChartArtifact_errors: each bad input fails the plan with a
// diagnostic that names the cause, and nothing is stored.
func TestAccHelmChartArtifact_errors(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{Username: "u", Password: "p"}, "1.0.0")
	down := startTestRepo(t, testenv.HelmRepoOptions{})
	downURL := down.URL()
	down.Close()
	cacheDir := t.TempDir()
	res := func(body string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) +
			"\nresource \"stevedore_helmchart_artifact\" \"podinfo\" {\n" + body + "\n}\n"
	}
	repoAttrs := fmt.Sprintf("repository = %s\nchart = \"podinfo\"\nusername = \"u\"\npassword = \"p\"\n", hcl(repo.URL()))
	steps := []resource.TestStep{
		{Config: res(repoAttrs + `version = ">>1"`), ExpectError: regexp.MustCompile(`Invalid version constraint`)},
		{Config: res(repoAttrs + `version = "9.*"`), ExpectError: errRe("version: no 'podinfo' chart with version matching '9.*' found")},
		{Config: res(fmt.Sprintf("repository = %s\nchart = \"podinfo\"\nusername = \"u\"\npassword = \"wrong\"", hcl(repo.URL()))), ExpectError: errRe("401 Unauthorized: check username and password")},
		{Config: res(fmt.Sprintf("repository = %s\nchart = \"podinfo\"", hcl(downURL))), ExpectError: regexp.MustCompile(`(?s)failed\s+to\s+fetch\s+http://127\.0\.0\.1:[0-9]+/index\.yaml:.*connection\s+refused`)},
		{Config: res(repoAttrs + `values_files = ["values-missing.yaml"]`), ExpectError: errRe("no values file found at path 'values-missing.yaml' in chart 'podinfo'")},
		{Config: res(repoAttrs + "verify {\npublic_keys = [\"x\"]\n}"), ExpectError: regexp.MustCompile(`Helm repositories \(https://\) serve no\s+signatures`)},
		{Config: res("repository = \"oci://127.0.0.1:1/charts/podinfo:1.0.0\"\nchart = \"podinfo\""), ExpectError: regexp.MustCompile(`must not carry a\s+tag\s+or\s+digest`)},
		// An invalid key is refused on its element before any request (the
		// registry at port 1 would refuse the connection).
		{Config: res("repository = \"oci://127.0.0.1:1/charts\"\nchart = \"podinfo\"\nverify {\npublic_keys = [\"not a key\"]\n}"),
			ExpectError: regexp.MustCompile(`(?s)Invalid\s+public\s+key.*verify\.public_keys\[0\]:\s+not\s+a\s+PEM\s+public\s+key`)},
		{Config: res(`source_path = "/nonexistent/chart"`), ExpectError: errRe("chart directory: stat /nonexistent/chart: no such file or directory")},
		{Config: res(fmt.Sprintf("repository = %s", hcl(repo.URL()))), ExpectError: regexp.MustCompile(`chart is required\s+with\s+repository`)},
	}
	for i := range steps {
		steps[i].PlanOnly = true
	}
	// Values files of a repository chart are inside the chart, which only an
	// apply fetches.
	steps[4].PlanOnly = false
	steps[0].PreConfig = func() { os.RemoveAll(cacheDir) }
	// Nothing was stored by any failing step.
	steps = append(steps, resource.TestStep{
		PreConfig: func() {
			if entries, _ := os.ReadDir(filepath.Join(cacheDir, "artifacts")); len(entries) != 0 {
				t.Errorf("failed plans stored %d artifacts", len(entries))
			}
		},
		Config: artifactProviderBlock(""),
	})
	artifactAccTest(t, resource.TestCase{Steps: steps})
}

// errRe matches text in a diagnostic, which the CLIs wrap at any space.
func errRe(text string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(text), " ", `\s+`))
}

// TestAccHelmChartArtifact_thirtyArtifactsWarmCache plans 30 artifacts
// against a warm cache: an empty plan without one request to the repository.
func TestAccHelmChartArtifact_thirtyArtifactsWarmCache(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.0.0", "1.1.0")
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "many" {
  count        = 30
  repository   = %s
  chart        = "podinfo"
  version      = count.index %% 2 == 0 ? "1.x" : "~1.0.0"
  values_files = count.index %% 3 == 0 ? ["values.yaml", "values-prod.yaml"] : null
}
`, hcl(repo.URL()))
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.RemoveAll(cacheDir) },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("stevedore_helmchart_artifact.many.0", "chart_version", "1.1.0"),
					resource.TestCheckResourceAttr("stevedore_helmchart_artifact.many.1", "chart_version", "1.0.0"),
					resource.TestCheckResourceAttrPair("stevedore_helmchart_artifact.many.0", "digest", "stevedore_helmchart_artifact.many.6", "digest"),
				),
			},
			{
				PreConfig: repo.ResetCounters,
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: func(*terraform.State) error {
					if n := repo.Requests(); n != 0 {
						return fmt.Errorf("%d requests to the repository for a plan of 30 artifacts within the TTL, want 0", n)
					}
					return nil
				},
			},
		},
	})
}

// TestAccHelmChartArtifact_ociNewVersion: a version pushed to the registry
// shows in the next plan (tags listed again after the TTL) and apply pulls
// it.
func TestAccHelmChartArtifact_ociNewVersion(t *testing.T) {
	t.Parallel()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	var minor atomic.Int32
	want := &dynamic{}
	pushNext := func() {
		v := fmt.Sprintf("1.%d.0", minor.Add(1))
		tgz, err := testenv.PackageChart(podinfoSrc(), v, t.TempDir())
		if err == nil {
			_, _, err = reg.PushChart(tgz, "charts")
		}
		if err != nil {
			t.Error(err)
		}
		want.set(v)
	}
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s\nrepository_cache_ttl = \"0s\"", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "^1.0.0"
}
`, hcl(reg.URL()+"/charts"))
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.RemoveAll(cacheDir); pushNext() },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("verified"), knownvalue.Bool(false)),
				},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				PreConfig: pushNext,
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("app_version"), knownvalue.StringExact("6.0.0")),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_version"), want.check()),
				},
				Check: artifactFileMatches(artifactAddr),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// TestAccHelmChartArtifact_refetchedDigestDiffers: with the ChartVersion
// strategy a change to the sources alone builds nothing (Flux's behaviour),
// but when the cached artifact is gone and building it again gives other
// bytes, the refresh reports it and the plan shows the artifact being built
// again.
func TestAccHelmChartArtifact_refetchedDigestDiffers(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	testenv.CopyDir(t, podinfoSrc(), src)
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(src))
	extra := filepath.Join(src, "templates", "extra.yaml")
	var first string
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.Remove(extra); os.RemoveAll(cacheDir) },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					resource.TestCheckResourceAttrWith(artifactAddr, "digest", func(v string) error { first = v; return nil }),
				),
			},
			{
				// Same version, new sources: nothing to do while the artifact
				// is in the cache.
				PreConfig: func() {
					if err := os.WriteFile(extra, []byte("# extra\n"), 0o644); err != nil {
						t.Error(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				// The cache is gone: the rebuild differs, so the plan says so.
				PreConfig: func() { os.RemoveAll(cacheDir) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("digest"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:[0-9a-f]{64}$`))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					resource.TestCheckResourceAttrWith(artifactAddr, "digest", func(v string) error {
						if v == first {
							return fmt.Errorf("digest %s unchanged after the sources changed", v)
						}
						return nil
					}),
				),
			},
		},
	})
}

// TestAccHelmChartArtifact_localRemoteDependency: a local chart whose
// dependency lives in a private Helm repository, fetched with the
// provider's registries credentials.
func TestAccHelmChartArtifact_localRemoteDependency(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{Username: "dep-user", Password: "dep-pass"}, "1.0.0", "1.1.0")
	dir := t.TempDir()
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: umbrella\nversion: 0.2.0\ndependencies:\n- name: podinfo\n  version: ~1.0.0\n  repository: %s\n", repo.URL())
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	config := artifactProviderBlock(fmt.Sprintf(`
  cache_dir = %s
  registries = [{
    url      = %s
    username = "dep-user"
    password = "dep-pass"
  }]`, hcl(cacheDir), hcl(repo.URL()))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}
`, hcl(dir))
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				PreConfig: func() { os.RemoveAll(cacheDir) },
				Config:    config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("umbrella")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringExact("0.2.0")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					func(s *terraform.State) error {
						data, err := os.ReadFile(s.RootModule().Resources[artifactAddr].Primary.Attributes["path"])
						if err != nil {
							return err
						}
						ch, err := loader.LoadArchive(bytes.NewReader(data))
						if err != nil {
							return err
						}
						if deps := ch.Dependencies(); len(deps) != 1 || deps[0].Name() != "podinfo" || deps[0].Metadata.Version != "1.0.0" {
							return fmt.Errorf("dependencies %v, want podinfo 1.0.0 from the repository", deps)
						}
						return nil
					},
				),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// TestAccHelmChartArtifact_sourceRootValuesFiles translates a Flux HelmChart
// of a GitRepository field by field: `chart: ./charts/app` and
// `valuesFiles: [./charts/app/values.yaml, ./env/prod/values.yaml]`, both
// relative to the source root, with nothing copied. The environment's values
// win; a change to them, outside the chart directory, shows in the plan as a
// new revision; a values file that climbs out of the root is refused.
func TestAccHelmChartArtifact_sourceRootValuesFiles(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "repo")
	testenv.CopyDir(t, podinfoSrc(), filepath.Join(root, "charts", "app"))
	prodValues := filepath.Join(root, "env", "prod", "values.yaml")
	if err := os.MkdirAll(filepath.Dir(prodValues), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "outside.yaml"), []byte("replicaCount: 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	config := func(valuesFiles string) string {
		return artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_root  = %s
  source_path  = "./charts/app"
  values_files = %s
}
`, hcl(root), valuesFiles)
	}
	fluxFiles := `["./charts/app/values.yaml", "./env/prod/values.yaml"]`
	packaged := func(wantReplicas string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			a := s.RootModule().Resources[artifactAddr].Primary.Attributes
			data, err := os.ReadFile(a["path"])
			if err != nil {
				return err
			}
			ch, err := loader.LoadArchive(bytes.NewReader(data))
			if err != nil {
				return err
			}
			img, _ := ch.Values["image"].(map[string]any)
			if fmt.Sprint(ch.Values["replicaCount"]) != wantReplicas || fmt.Sprint(img["tag"]) != "6.0.0" || ch.Metadata.Version != a["revision"] {
				return fmt.Errorf("packaged replicaCount %v, image %v, version %s; want replicaCount %s over the chart's values",
					ch.Values["replicaCount"], ch.Values["image"], ch.Metadata.Version, wantReplicas)
			}
			return nil
		}
	}
	var firstRevision string
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{
			{
				// Out of the source root: refused, on the element that is
				// (first: the post-test destroy runs the last configuration).
				Config:      config(`["./env/prod/values.yaml", "../outside.yaml"]`),
				PlanOnly:    true,
				ExpectError: errRe(`"../outside.yaml" is outside source_root`),
			},
			{
				PreConfig: func() {
					os.RemoveAll(cacheDir)
					if err := os.WriteFile(prodValues, []byte("replicaCount: 3\n"), 0o644); err != nil {
						t.Error(err)
					}
				},
				Config: config(fluxFiles),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringRegexp(regexp.MustCompile(`^1\.0\.0\+[0-9a-f]{12}$`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("chart_name"), knownvalue.StringExact("podinfo")),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("id"), knownvalue.StringExact(filepath.Join(root, "charts", "app"))),
					statecheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("observed_values_files"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.StringExact("./charts/app/values.yaml"), knownvalue.StringExact("./env/prod/values.yaml"),
					})),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					artifactFileMatches(artifactAddr),
					packaged("3"),
					resource.TestCheckResourceAttrWith(artifactAddr, "revision", func(v string) error { firstRevision = v; return nil }),
				),
			},
			{
				// The environment's values change, outside the chart
				// directory: a new revision, known at plan.
				PreConfig: func() {
					if err := os.WriteFile(prodValues, []byte("replicaCount: 4\n"), 0o644); err != nil {
						t.Error(err)
					}
				},
				Config: config(fluxFiles),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(artifactAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(artifactAddr, tfjsonpath.New("revision"), knownvalue.StringFunc(func(v string) error {
						if v == firstRevision {
							return fmt.Errorf("revision %s unchanged", v)
						}
						return nil
					})),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(artifactFileMatches(artifactAddr), packaged("4")),
			},
		},
	})
}

// TestAccHelmChartArtifact_keylessWithoutIdentity: keyless verification
// without match_oidc_identity is accepted, as Flux accepts it (the plan
// warning is asserted by TestHelmChartArtifact_keylessWithoutIdentityWarns:
// the test harness cannot see warnings), and verified at plan. Only the plan
// runs: keyless verification itself needs Sigstore's TUF root, Fulcio and
// Rekor, which this test does not reach, so the plan fails there, in the
// verification and not in the configuration.
func TestAccHelmChartArtifact_keylessWithoutIdentity(t *testing.T) {
	t.Parallel()
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	tgz, err := testenv.PackageChart(podinfoSrc(), "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.PushChart(tgz, "charts"); err != nil {
		t.Fatal(err)
	}
	config := artifactProviderBlock(fmt.Sprintf("cache_dir = %s", hcl(t.TempDir()))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  repository = %s
  chart      = "podinfo"
  version    = "1.x"
  verify {
    provider = "cosign"
  }
}
`, hcl(reg.URL()+"/charts"))
	artifactAccTest(t, resource.TestCase{
		Steps: []resource.TestStep{{
			Config:      config,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Cannot build the chart artifact.*keyless\s+verification`),
		}},
	})
}
