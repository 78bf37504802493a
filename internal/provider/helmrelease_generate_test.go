package provider

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// objectVersions fingerprints every ConfigMap, Secret (Helm's release records
// among them), Service and Deployment in ns, by kind/name: the resourceVersion
// of those that have no status, and for Deployments what a writer of the
// object changes (generation, labels, annotations, and every managed-fields
// entry but the status subresource's, with its time). A Deployment's status
// moves on its own, after the snapshot when the machine is loaded, and no
// adoption writes it.
func objectVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvk := range [][2]string{{"v1", "ConfigMapList"}, {"v1", "SecretList"}, {"v1", "ServiceList"}, {"apps/v1", "DeploymentList"}} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gvk[0])
		list.SetKind(gvk[1])
		if err := testClient(t).List(testenv.Context(t), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			var written []string
			for _, mf := range o.GetManagedFields() {
				if mf.Subresource == "status" {
					continue
				}
				at := ""
				if mf.Time != nil {
					at = mf.Time.UTC().Format(time.RFC3339)
				}
				written = append(written, fmt.Sprintf("%s/%s@%s", mf.Manager, mf.Operation, at))
			}
			kind := strings.TrimSuffix(gvk[1], "List")
			rv := o.GetResourceVersion()
			if kind == "Deployment" {
				rv = "" // its status moves on its own
			}
			out[kind+"/"+o.GetName()] = fmt.Sprintf("rv=%s gen=%d labels=%v annotations=%v managers=%v",
				rv, o.GetGeneration(), o.GetLabels(), o.GetAnnotations(), written)
		}
	}
	return out
}

// appliesUnchanged applies w's configuration and checks that the adoption
// made no Helm revision of releases and wrote no object of ns (revisions and
// objects are as they were before), and that the next plan is empty.
func appliesUnchanged(t *testing.T, w *workspace, releases [][2]string, ns string, revisions map[string][]string, objects map[string]string) {
	t.Helper()
	if out, code := w.apply(); code != 0 {
		t.Fatalf("%s apply of the generated configuration: exit %d\n%s", w.cli.name, code, out)
	}
	if after := revisionsOf(t, releases); !maps.EqualFunc(revisions, after, slices.Equal) {
		t.Errorf("%s: revisions changed by the adoption:\nbefore %v\nafter  %v", w.cli.name, revisions, after)
	}
	if after := objectVersions(t, ns); !maps.Equal(objects, after) {
		t.Errorf("%s: objects written by the adoption:\nbefore %v, after %v", w.cli.name, objects, after)
	}
	w.planEmpty()
}

// generateReleases runs `plan -generate-config-out=generated.tf` in w, which
// must succeed, and returns its output, the file, and the text after each
// `resource "stevedore_helmrelease"` of it, of which there must be n.
func generateReleases(t *testing.T, w *workspace, n int) (out, gen string, blocks []string) {
	t.Helper()
	out, gen, _ = generateConfig(t, w)
	blocks = strings.Split(gen, "resource \"stevedore_helmrelease\"")[1:]
	if len(blocks) != n {
		t.Fatalf("%s: %d resource blocks generated, want %d:\n%s", w.cli.name, len(blocks), n, gen)
	}
	return out, gen, blocks
}

// generatedImports are the import blocks of every release of ns, one per
// release, as the example of the stevedore_helmreleases data source writes
// them for `plan -generate-config-out` (its namespace set to ns).
func generatedImports(t *testing.T, c cli, provider, ns string) string {
	t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "data-sources", "stevedore_helmreleases", "generate.tf"))
	if err != nil {
		t.Fatal(err)
	}
	config := strings.Replace(string(example), `namespace = "apps"`, "namespace = "+hcl(ns), 1)
	lister := newWorkspace(t, c, provider+config)
	lister.must("apply", "-auto-approve", "-input=false")
	return lister.must("output", "-raw", "import_blocks")
}

// TestAccHelmRelease_generateConfig: releases the helm CLIs (3 and 4)
// installed are imported by import blocks alone, which the listing writes
// (examples/data-sources/stevedore_helmreleases/generate.tf), and `plan
// -generate-config-out` writes their resource blocks: for an archive
// stevedore fetched from a Helm repository, the inline source (repository,
// chart, version); for one built from a local directory, `chart { digest }`,
// with a plan warning naming the attributes to write for other machines.
// The generated file names no path of this machine and applies unchanged:
// no new Helm revision, no object written, and the next plan is empty.
// OpenTofu and Terraform.
func TestAccHelmRelease_generateConfig(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.1.0")
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "gen-"+c.name)
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		kc := testenv.Need(t).Cluster.Kubeconfig
		provider := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))

		// The archives the CLIs install, fetched into this machine's cache
		// (two versions: archives of one content from two sources would
		// prove nothing about which one Helm installed).
		other := newWorkspace(t, c, provider+fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "local" {
  source_path = %s
}

resource "stevedore_helmchart_artifact" "remote" {
  repository = %s
  chart      = "podinfo"
  version    = "1.1.0"
}

output "local" {
  value = stevedore_helmchart_artifact.local.path
}

output "remote" {
  value = stevedore_helmchart_artifact.remote.path
}
`, hcl(chartDir), hcl(repo.URL())))
		other.must("apply", "-auto-approve", "-input=false")
		local := strings.TrimSpace(other.must("output", "-raw", "local"))
		remote := strings.TrimSpace(other.must("output", "-raw", "remote"))
		installs := []struct{ cli, name, archive string }{
			{"helm3", "h3", local}, {"helm4", "h4", local}, {"helm3", "h3-repo", remote}, {"helm4", "h4-repo", remote},
		}
		var releases [][2]string
		for _, in := range installs {
			if _, err := testenv.HelmCLI(testenv.Context(t), kc, in.cli, "install", in.name, in.archive, "--namespace", ns,
				"--set", "replicaCount=2"); err != nil {
				t.Fatal(err)
			}
			releases = append(releases, [2]string{ns, in.name})
		}
		revisions, objects := revisionsOf(t, releases), objectVersions(t, ns)

		// The import blocks, one per release, written by the listing as the
		// data source's example writes them.
		imports := generatedImports(t, c, provider, ns)
		w := newWorkspace(t, c, provider+imports)
		out, gen, blocks := generateReleases(t, w, 4)
		if strings.Contains(gen, cacheDir) || regexp.MustCompile(`"/`).MatchString(gen) {
			t.Errorf("%s: the generated file names a path:\n%s", c.name, gen)
		}
		for _, b := range blocks {
			addr := strings.Fields(b)[0]
			b = strings.Join(strings.Fields(b), " ") // the alignment aside
			fromRepo := strings.Contains(addr, "repo")
			want := []string{`digest = "sha256:`}
			if fromRepo {
				want = []string{"repository = " + hcl(repo.URL()), `chart = "podinfo"`, `version = "1.1.0"`}
			}
			for _, s := range want {
				if !strings.Contains(b, s) {
					t.Errorf("%s: block %s lacks %s:\n%s", c.name, addr, s, b)
				}
			}
			if !strings.Contains(b, "path = null") || fromRepo && !strings.Contains(b, "digest = null") {
				t.Errorf("%s: block %s names a path, or a digest as well as its source:\n%s", c.name, addr, b)
			}
		}
		// One warning per release given by digest: h3 and h4.
		// (Diagnostics are wrapped, each line after a bar.)
		flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
		if n := strings.Count(flat, "replace chart.digest with chart.repository"); n != 2 {
			t.Errorf("%s: %d warnings naming the chart attributes to write, want 2:\n%s", c.name, n, out)
		}

		appliesUnchanged(t, w, releases, ns, revisions, objects)
	})
}

// TestAccHelmRelease_generateConfigFlux: releases Flux made for HelmReleases
// are imported by their HelmRelease IDs (`ns/name@target`), and `plan
// -generate-config-out` writes each chart block from the HelmRelease's
// source in the cluster, with an empty artifact cache: a HelmRepository
// (spec.chart, following a version range, which a warning names) and an
// OCIRepository (spec.chartRef). The generated file applies unchanged: no
// new Helm revision, no object written, and the next plan is empty.
// OpenTofu and Terraform.
func TestAccHelmRelease_generateConfigFlux(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.1.0")
	reg, err := testenv.StartOCIRegistry(testenv.OCIRegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	tgz, err := testenv.PackageChart(podinfoSrc(), "1.1.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.PushChart(tgz, "charts"); err != nil {
		t.Fatal(err)
	}
	kc := testClient(t)
	testenv.InstallFluxCRDs(t, kc)
	create := func(apiVersion, kind, ns, name string, spec map[string]any) {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		if err := kc.Create(testenv.Context(t), u); err != nil {
			t.Fatal(err)
		}
	}
	forEachCLI(t, func(t *testing.T, c cli) {
		fs, apps := uniqueNamespace(t, "gen-flux-"+c.name), uniqueNamespace(t, "gen-apps-"+c.name)
		create("source.toolkit.fluxcd.io/v1", "HelmRepository", fs, "podinfo", map[string]any{"url": repo.URL(), "interval": "10m"})
		create("helm.toolkit.fluxcd.io/v2", "HelmRelease", fs, "web", map[string]any{
			"interval": "10m", "targetNamespace": apps,
			"chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": "1.x",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"}}},
		})
		create("source.toolkit.fluxcd.io/v1", "OCIRepository", fs, "podinfo-oci", map[string]any{
			"url": reg.URL() + "/charts/podinfo", "ref": map[string]any{"tag": "1.1.0"}, "interval": "10m"})
		create("helm.toolkit.fluxcd.io/v2", "HelmRelease", fs, "api", map[string]any{
			"interval": "10m", "targetNamespace": apps,
			"chartRef": map[string]any{"kind": "OCIRepository", "name": "podinfo-oci"},
		})
		var releases [][2]string
		var imports strings.Builder
		for _, hr := range []string{"web", "api"} {
			name, err := testenv.FluxInstall(testenv.Need(t).Cluster.Kubeconfig, fs, hr, apps, tgz, map[string]any{"replicaCount": 2})
			if err != nil {
				t.Fatal(err)
			}
			releases = append(releases, [2]string{fs, name})
			fmt.Fprintf(&imports, "import {\n  to = stevedore_helmrelease.%s\n  id = \"%s/%s@%s\"\n}\n", hr, fs, hr, apps)
		}
		revisions, objects := revisionsOf(t, releases), objectVersions(t, apps)

		w := newWorkspace(t, c, providerBlock(fmt.Sprintf("cache_dir = %s", hcl(t.TempDir())))+imports.String())
		out, _, blocks := generateReleases(t, w, 2)
		for _, b := range blocks {
			addr := strings.Fields(b)[0]
			b = strings.Join(strings.Fields(b), " ")
			wantRepo := repo.URL()
			if strings.Contains(addr, "api") {
				wantRepo = reg.URL() + "/charts"
			}
			for _, s := range []string{"repository = " + hcl(wantRepo), `chart = "podinfo"`, `version = "1.1.0"`,
				"path = null", "digest = null", "target_namespace = " + hcl(apps)} {
				if !strings.Contains(b, s) {
					t.Errorf("%s: block %s lacks %s:\n%s", c.name, addr, s, b)
				}
			}
		}
		flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
		for _, s := range []string{`Flux follows version "1.x"; the block pins 1.1.0, the version Helm recorded: write "1.x" to follow it`,
			"HelmRelease " + fs + "/web, HelmRepository " + fs + "/podinfo"} {
			if !strings.Contains(flat, s) {
				t.Errorf("%s: the plan does not warn %q:\n%s", c.name, s, out)
			}
		}
		if strings.Contains(flat, "HelmRelease "+fs+"/api") {
			t.Errorf("%s: a warning for the OCIRepository release, which has nothing to write:\n%s", c.name, out)
		}

		appliesUnchanged(t, w, releases, apps, revisions, objects)
	})
}

// TestAccHelmRelease_generateConfigFromHelmRelease: a release hashicorp/helm's
// helm_release installed from a Helm repository, forgotten by that
// configuration (`state rm`), is imported by an import block alone. Helm
// records no repository and this machine's cache never fetched the chart, so
// `plan -generate-config-out` writes a chart block without a source, and the
// plan warns naming the chart and version to write: the three lines the user
// writes (repository, chart, version) are the only edit, after which the
// file applies with no new Helm revision and no object written, and the next
// plan is empty. OpenTofu and Terraform.
func TestAccHelmRelease_generateConfigFromHelmRelease(t *testing.T) {
	needAcc(t)
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.1.0")
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "gen-hr-"+c.name)
		dir := t.TempDir()
		w := helmWorkspace(t, c)
		w.write(helmProviderBlock(t, dir) + fmt.Sprintf(`
resource "helm_release" "web" {
  name       = "web"
  namespace  = %q
  repository = %s
  chart      = "podinfo"
  version    = "1.1.0"
  values     = [yamlencode({ replicaCount = 2 })]
}
`, ns, hcl(repo.URL())))
		w.must("apply", "-auto-approve", "-input=false")
		w.must("state", "rm", "helm_release.web")
		releases := [][2]string{{ns, "web"}}
		revisions, objects := revisionsOf(t, releases), objectVersions(t, ns)

		w.write(providerBlock(fmt.Sprintf("cache_dir = %s", hcl(t.TempDir()))) + fmt.Sprintf(`
import {
  to = stevedore_helmrelease.web
  id = "%s/web"
}
`, ns))
		out, _ := w.run("plan", "-generate-config-out=generated.tf", "-input=false")
		gen := filepath.Join(w.dir, "generated.tf")
		data, err := os.ReadFile(gen)
		if err != nil {
			t.Fatalf("%s: no generated file: %v\n%s", c.name, err, out)
		}
		t.Logf("%s generated.tf:\n%s", c.name, data)
		flat := strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
		if want := `chart.chart = "podinfo" and chart.version = "1.1.0"`; !strings.Contains(flat, want) {
			t.Errorf("%s: the plan does not name the attributes to write (%s):\n%s", c.name, want, out)
		}
		// The user's edit: the chart's source, three lines.
		edited, n := string(data), 0
		for attr, value := range map[string]string{"repository": hcl(repo.URL()), "chart": `"podinfo"`, "version": `"1.1.0"`} {
			re := regexp.MustCompile(`(?m)^(\s+` + attr + `\s+=) null$`)
			if len(re.FindAllString(edited, -1)) != 1 {
				t.Fatalf("%s: generated.tf has not one %s = null line to edit:\n%s", c.name, attr, edited)
			}
			edited = re.ReplaceAllString(edited, "${1} "+value)
			n++
		}
		if err := os.WriteFile(gen, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d lines edited", c.name, n)
		appliesUnchanged(t, w, releases, ns, revisions, objects)
	})
}
