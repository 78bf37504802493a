package provider

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// adoptionConfig is the configuration that adopts every release Helm stores
// in ns: a stevedore_helmreleases of the namespace, an import block with
// for_each over it, and one hand-written resource block, for_each over the
// same, that sets what each import ID sets; every release runs the chart
// of chartDir, with no values. extra is added.
func adoptionConfig(cacheDir, chartDir, ns, extra string) string {
	return providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir))) + fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

data "stevedore_helmreleases" "all" {
  namespace = %q
}

import {
  for_each = data.stevedore_helmreleases.all.releases
  to       = stevedore_helmrelease.this[each.key]
  id       = each.value.import_id
}

resource "stevedore_helmrelease" "this" {
  for_each          = data.stevedore_helmreleases.all.releases
  name              = each.value.resource.name
  namespace         = each.value.resource.namespace
  target_namespace  = each.value.resource.target_namespace
  release_name      = each.value.resource.release_name
  storage_namespace = each.value.resource.storage_namespace
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
}
%s`, hcl(chartDir), ns, extra)
}

// revisionsOf is the revisions of each release (storage namespace, name).
func revisionsOf(t *testing.T, releases [][2]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, r := range releases {
		revs, err := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, r[0], r[1])
		if err != nil {
			t.Fatal(err)
		}
		out[r[0]+"/"+r[1]] = revs
	}
	return out
}

// TestAccHelmReleases_adoptByForEach: releases made from outside (helm 3 and
// helm 4 CLIs, one with `--labels`, a Flux HelmRelease with a target
// namespace, the Helm SDK storing elsewhere than its objects) and by another
// stevedore configuration are listed by stevedore_helmreleases, with each
// filter, and adopted in one apply by an import block with for_each over it
// and a hand-written resource block: no new Helm revision, and the next plan
// is empty (exit 0). OpenTofu and Terraform (for_each in import: 1.7+).
func TestAccHelmReleases_adoptByForEach(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns, target := uniqueNamespace(t, "ls-"+c.name), uniqueNamespace(t, "ls-target")
		cacheDir := t.TempDir()
		chartDir := chartCopy(t, "1.0.0")
		kc := testenv.Need(t).Cluster.Kubeconfig

		// Another configuration's release, and the archive the others install.
		other := newWorkspace(t, c, providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))+fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_helmrelease" "sd" {
  name      = "sd"
  namespace = %q
  chart {
    path   = stevedore_helmchart_artifact.podinfo.path
    digest = stevedore_helmchart_artifact.podinfo.digest
  }
}

output "path" {
  value = stevedore_helmchart_artifact.podinfo.path
}
`, hcl(chartDir), ns))
		other.must("apply", "-auto-approve", "-input=false")
		archive := strings.TrimSpace(other.must("output", "-raw", "path"))
		for _, h := range [][]string{
			{"helm3", "install", "h3", archive},
			{"helm4", "install", "h4", archive},
			{"helm4", "install", "h4-labelled", archive, "--labels", "group=x"},
		} {
			if _, err := testenv.HelmCLI(testenv.Context(t), kc, h[0], append(h[1:], "--namespace", ns)...); err != nil {
				t.Fatal(err)
			}
		}
		fluxName, err := testenv.FluxInstall(kc, ns, "fluxy", target, archive, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := testenv.HelmInstallStored(kc, ns, target, "sdk", archive, nil); err != nil {
			t.Fatal(err)
		}
		releases := [][2]string{{ns, "sd"}, {ns, "h3"}, {ns, "h4"}, {ns, "h4-labelled"}, {ns, fluxName}, {ns, "sdk"}}
		before := revisionsOf(t, releases)

		w := newWorkspace(t, c, adoptionConfig(cacheDir, chartDir, ns, fmt.Sprintf(`
data "stevedore_helmreleases" "helm" {
  namespace = %[1]q
  owner     = "helm"
}

data "stevedore_helmreleases" "flux" {
  namespace = %[1]q
  owner     = "flux"
}

data "stevedore_helmreleases" "stevedore" {
  namespace = %[1]q
  owner     = "stevedore"
}

data "stevedore_helmreleases" "labelled" {
  namespace      = %[1]q
  label_selector = "group=x"
}

output "listed" {
  value = {
    all       = { for k, r in data.stevedore_helmreleases.all.releases : k => "${r.owner} ${r.import_id} ${r.chart_name}@${r.chart_version} r${r.revision} ${r.status}" }
    helm      = keys(data.stevedore_helmreleases.helm.releases)
    flux      = keys(data.stevedore_helmreleases.flux.releases)
    stevedore = keys(data.stevedore_helmreleases.stevedore.releases)
    labelled  = keys(data.stevedore_helmreleases.labelled.releases)
  }
}
`, ns)))
		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the adoption: exit %d\n%s", c.name, code, out)
		}
		if after := revisionsOf(t, releases); !maps.EqualFunc(before, after, slices.Equal) {
			t.Errorf("revisions changed by the adoption:\nbefore %v\nafter  %v", before, after)
		}
		w.planEmpty()

		var listed struct {
			All                             map[string]string
			Helm, Flux, Stevedore, Labelled []string
		}
		if err := json.Unmarshal([]byte(w.must("output", "-json", "listed")), &listed); err != nil {
			t.Fatal(err)
		}
		k := func(name string) string { return ns + "/" + name }
		wantAll := map[string]string{
			k("sd"):          "stevedore " + ns + "/sd podinfo@1.0.0 r1 deployed",
			k("h3"):          "helm " + ns + "/h3 podinfo@1.0.0 r1 deployed",
			k("h4"):          "helm " + ns + "/h4 podinfo@1.0.0 r1 deployed",
			k("h4-labelled"): "helm " + ns + "/h4-labelled podinfo@1.0.0 r1 deployed",
			k(fluxName):      "flux " + ns + "/fluxy@" + target + " podinfo@1.0.0 r1 deployed",
			k("sdk"):         "helm " + target + "/sdk,storage_namespace=" + ns + " podinfo@1.0.0 r1 deployed",
		}
		if !maps.Equal(listed.All, wantAll) {
			t.Errorf("listed:\n%v\nwant:\n%v", listed.All, wantAll)
		}
		for _, f := range []struct {
			name      string
			got, want []string
		}{
			{"owner helm", listed.Helm, []string{k("h3"), k("h4"), k("h4-labelled"), k("sdk")}},
			{"owner flux", listed.Flux, []string{k(fluxName)}},
			{"owner stevedore", listed.Stevedore, []string{k("sd")}},
			{"label_selector", listed.Labelled, []string{k("h4-labelled")}},
		} {
			if !slices.Equal(f.got, f.want) {
				t.Errorf("%s: %v, want %v", f.name, f.got, f.want)
			}
		}
	})
}

// TestAccListDataSources_badFilters: an unknown owner and a malformed label
// selector are errors of `validate`, which reads no cluster, naming the
// attribute, in both listing data sources.
func TestAccListDataSources_badFilters(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		for _, ds := range []string{"stevedore_helmreleases", "stevedore_resourcesets"} {
			for _, tc := range []struct{ attr, value, want string }{
				{"owner", "hashicorp", `value must be one of`},
				{"label_selector", "app in (a", `is not a Kubernetes label selector`},
			} {
				w := newWorkspace(t, c, providerBlock("")+fmt.Sprintf("data %q \"x\" {\n  %s = %q\n}\n", ds, tc.attr, tc.value))
				out, code := w.run("validate")
				if code == 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, tc.attr) {
					t.Errorf("%s %s = %q: validate exit %d, want an error naming %s that says %q:\n%s", ds, tc.attr, tc.value, code, tc.attr, tc.want, out)
				}
			}
		}
	})
}

// TestAdoptFiftyReleases measures the adoption of 50 releases the helm4 CLI
// installed, through stevedore_helmreleases and one import block with
// for_each, under OpenTofu: the time of the apply (its plan included) and of
// the next plan, which must be empty. A measure, not an assertion of its
// figures: it runs only with STEVEDORE_MEASURE_ADOPT=1 (and TF_ACC).
func TestAdoptFiftyReleases(t *testing.T) {
	if os.Getenv("STEVEDORE_MEASURE_ADOPT") == "" {
		t.Skip("a measure: set STEVEDORE_MEASURE_ADOPT=1 to run it")
	}
	needAcc(t)
	var tofu cli
	for _, c := range clis(t, false) {
		if c.name == "tofu" {
			tofu = c
		}
	}
	ns := uniqueNamespace(t, "adopt50")
	cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
	kc := testenv.Need(t).Cluster.Kubeconfig
	w := newWorkspace(t, tofu, providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))+fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

output "path" {
  value = stevedore_helmchart_artifact.podinfo.path
}
`, hcl(chartDir)))
	w.must("apply", "-auto-approve", "-input=false")
	archive := strings.TrimSpace(w.must("output", "-raw", "path"))
	const n = 50
	start := time.Now()
	for i := range n {
		if _, err := testenv.HelmCLI(testenv.Context(t), kc, "helm4", "install", fmt.Sprintf("r%02d", i), archive, "--namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("helm4 install of %d releases: %s", n, time.Since(start).Round(time.Millisecond))
	w.write(adoptionConfig(cacheDir, chartDir, ns, ""))
	start = time.Now()
	if out, code := w.apply(); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, out)
	}
	applied := time.Since(start)
	start = time.Now()
	w.planEmpty()
	planned := time.Since(start)
	for i := range n {
		revs, err := testenv.ReleaseRevisions(kc, ns, fmt.Sprintf("r%02d", i))
		if err != nil || !slices.Equal(revs, []string{"1:deployed"}) {
			t.Errorf("r%02d: revisions %v, %v", i, revs, err)
		}
	}
	t.Logf("tofu apply adopting %d releases (list, import for_each, plan, apply): %s; next plan (empty): %s",
		n, applied.Round(time.Millisecond), planned.Round(time.Millisecond))
}

// TestAccResourceSets_adoptByForEach: two stevedore sets another
// configuration applied and a flux-operator ResourceSet are listed by
// stevedore_resourcesets, with each filter; the stevedore sets are adopted in
// one apply by an import block with for_each over the listing and a
// hand-written resource block, with no object written (resourceVersions
// unchanged) and an empty next plan. OpenTofu and Terraform.
func TestAccResourceSets_adoptByForEach(t *testing.T) {
	t.Parallel()
	kc := testClient(t)
	testenv.InstallResourceSetCRD(t, kc)
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "lsets-"+c.name)
		templates := fmt.Sprintf(`
locals {
  templates = {
    a = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {set: a}\ndata: {k: v}\n"
    b = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata: {k: v}\n"
  }
  ns = %q
}
`, ns)
		other := newWorkspace(t, c, providerBlock("")+templates+`
resource "stevedore_resourceset" "sets" {
  for_each           = local.templates
  name               = each.key
  namespace          = local.ns
  resources_template = each.value
}
`)
		other.must("apply", "-auto-approve", "-input=false")
		rs := &unstructured.Unstructured{}
		rs.SetAPIVersion("fluxcd.controlplane.io/v1")
		rs.SetKind("ResourceSet")
		rs.SetNamespace(ns)
		rs.SetName("tenants")
		rs.Object["spec"] = map[string]any{}
		if err := kc.Create(testenv.Context(t), rs); err != nil {
			t.Fatal(err)
		}
		versions := func() map[string]string {
			out := map[string]string{}
			for _, name := range []string{"a", "b"} {
				var cm corev1.ConfigMap
				if err := kc.Get(testenv.Context(t), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
					t.Fatal(err)
				}
				out[name] = cm.ResourceVersion
			}
			return out
		}
		before := versions()

		w := newWorkspace(t, c, providerBlock("")+templates+`
data "stevedore_resourcesets" "all" {
  namespace = local.ns
}

data "stevedore_resourcesets" "stevedore" {
  namespace = local.ns
  owner     = "stevedore"
}

data "stevedore_resourcesets" "flux_operator" {
  namespace = local.ns
  owner     = "flux-operator"
}

data "stevedore_resourcesets" "labelled" {
  namespace      = local.ns
  label_selector = "set=a"
}

locals {
  sets = { for s in data.stevedore_resourcesets.stevedore.resource_sets : s.name => s }
}

import {
  for_each = local.sets
  to       = stevedore_resourceset.this[each.key]
  id       = each.value.import_id
}

resource "stevedore_resourceset" "this" {
  for_each           = local.sets
  name               = each.value.name
  namespace          = each.value.namespace
  resources_template = local.templates[each.key]
}

output "listed" {
  value = {
    all           = [for s in data.stevedore_resourcesets.all.resource_sets : "${s.name} ${s.owner} ${s.objects} ${coalesce(s.import_id, "-")}"]
    flux_operator = [for s in data.stevedore_resourcesets.flux_operator.resource_sets : s.name]
    labelled      = [for s in data.stevedore_resourcesets.labelled.resource_sets : s.name]
  }
}
`)
		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the adoption: exit %d\n%s", c.name, code, out)
		}
		if after := versions(); !maps.Equal(before, after) {
			t.Errorf("objects written by the adoption: resourceVersions before %v, after %v", before, after)
		}
		w.planEmpty()
		var listed struct {
			All          []string
			FluxOperator []string `json:"flux_operator"`
			Labelled     []string
		}
		if err := json.Unmarshal([]byte(w.must("output", "-json", "listed")), &listed); err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name      string
			got, want []string
		}{
			{"all", listed.All, []string{"a stevedore 1 " + ns + "/a", "b stevedore 1 " + ns + "/b", "tenants flux-operator 0 flux-operator:" + ns + "/tenants"}},
			{"owner flux-operator", listed.FluxOperator, []string{"tenants"}},
			{"label_selector", listed.Labelled, []string{"a"}},
		} {
			if !slices.Equal(f.got, f.want) {
				t.Errorf("%s: %q, want %q", f.name, f.got, f.want)
			}
		}
	})
}

// setsAdoptionConfig adopts the stevedore sets of ns by stevedore_resourcesets
// and an import block with for_each; each set n applies the ConfigMap n.
func setsAdoptionConfig(ns string) string {
	return fmt.Sprintf(`
data "stevedore_resourcesets" "mine" {
  namespace = %q
  owner     = "stevedore"
}

locals {
  stevedore_sets = { for s in data.stevedore_resourcesets.mine.resource_sets : s.name => s }
}

import {
  for_each = local.stevedore_sets
  to       = stevedore_resourceset.adopted[each.key]
  id       = each.value.import_id
}

resource "stevedore_resourceset" "adopted" {
  for_each           = local.stevedore_sets
  name               = each.value.name
  namespace          = each.value.namespace
  resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${each.key}\ndata: {k: v}\n"
}
`, ns)
}

// TestAccAdoptCluster_twentyReleasesFiveSets: a namespace of 20 releases
// (10 by the helm3 CLI, 10 by helm4) and 5 stevedore sets of another
// configuration is adopted by one configuration, through the two listing data
// sources and import blocks with for_each, in one apply: no new Helm
// revision, no object written, and an empty next plan. OpenTofu and Terraform.
func TestAccAdoptCluster_twentyReleasesFiveSets(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "adopt-"+c.name)
		cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
		kc := testenv.Need(t).Cluster.Kubeconfig
		other := newWorkspace(t, c, providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))+fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "podinfo" {
  source_path = %s
}

resource "stevedore_resourceset" "sets" {
  for_each           = toset(["s0", "s1", "s2", "s3", "s4"])
  name               = each.key
  namespace          = %q
  resources_template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${each.key}\ndata: {k: v}\n"
}

output "path" {
  value = stevedore_helmchart_artifact.podinfo.path
}
`, hcl(chartDir), ns))
		other.must("apply", "-auto-approve", "-input=false")
		archive := strings.TrimSpace(other.must("output", "-raw", "path"))
		var releases [][2]string
		for i := range 20 {
			name := fmt.Sprintf("r%02d", i)
			if _, err := testenv.HelmCLI(testenv.Context(t), kc, testenv.HelmCLIs[i%2], "install", name, archive, "--namespace", ns); err != nil {
				t.Fatal(err)
			}
			releases = append(releases, [2]string{ns, name})
		}
		versions := func() map[string]string {
			out := map[string]string{}
			for i := range 5 {
				var cm corev1.ConfigMap
				if err := testClient(t).Get(testenv.Context(t), client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("s%d", i)}, &cm); err != nil {
					t.Fatal(err)
				}
				out[cm.Name] = cm.ResourceVersion
			}
			return out
		}
		revsBefore, objsBefore := revisionsOf(t, releases), versions()

		w := newWorkspace(t, c, adoptionConfig(cacheDir, chartDir, ns, setsAdoptionConfig(ns)+`
output "adopted" {
  value = [length(stevedore_helmrelease.this), length(stevedore_resourceset.adopted)]
}
`))
		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the adoption: exit %d\n%s", c.name, code, out)
		}
		if got := strings.Join(strings.Fields(w.must("output", "-json", "adopted")), ""); got != "[20,5]" {
			t.Errorf("adopted %s releases and sets, want [20,5]", got)
		}
		if after := revisionsOf(t, releases); !maps.EqualFunc(revsBefore, after, slices.Equal) {
			t.Errorf("revisions changed by the adoption:\nbefore %v\nafter  %v", revsBefore, after)
		}
		if after := versions(); !maps.Equal(objsBefore, after) {
			t.Errorf("objects written by the adoption: resourceVersions before %v, after %v", objsBefore, after)
		}
		w.planEmpty()
	})
}
