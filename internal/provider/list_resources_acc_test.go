package provider

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/resourceset"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The list resources run under the CLIs that have `terraform query`
// (cliQuery: Terraform 1.14+); under OpenTofu, which has none, each case
// skips, naming why. They run the CLI as a user does (workspace), since
// terraform-plugin-testing v1.16 has no step that runs `terraform query`
// -generate-config-out and then applies what it wrote.

// queryCLIs runs f under each CLI that has list resources, in parallel;
// the others skip with the reason.
func queryCLIs(t *testing.T, f func(t *testing.T, c cli)) {
	t.Helper()
	forEachCLI(t, func(t *testing.T, c cli) {
		c.need(t, cliQuery)
		f(t, c)
	})
}

// query writes the list blocks as w's query file and runs `terraform
// query` with args, returning its output and exit code.
func query(w *workspace, lists string, args ...string) (string, int) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "list.tfquery.hcl"), []byte(lists), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return w.run(append([]string{"query"}, args...)...)
}

// listBlock is a list block of typ named name, with config's attributes.
func listBlock(typ, name, config string) string {
	return fmt.Sprintf("list %q %q {\n  provider = stevedore\n  config {\n%s\n  }\n}\n", typ, name, config)
}

// generateByQuery runs `terraform query -generate-config-out=generated.tf`
// over lists in w, which must succeed, and returns its output and the file.
// The query file is removed after it: what apply reads is main.tf and the
// generated file.
func generateByQuery(t *testing.T, w *workspace, lists string) (out, gen string) {
	t.Helper()
	out, code := query(w, lists, "-generate-config-out=generated.tf")
	if code != 0 {
		t.Fatalf("%s query -generate-config-out: exit %d\n%s", w.cli.name, code, out)
	}
	data, err := os.ReadFile(filepath.Join(w.dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s query output:\n%s\ngenerated.tf:\n%s", w.cli.name, out, data)
	return out, string(data)
}

// flat is out without the diagnostics' bars and line breaks.
func flat(out string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "│", "")), " ")
}

// TestAccQuery_helmReleases: the stevedore_helmrelease list resource lists
// releases the helm 3 and helm 4 CLIs installed (from a chart repository
// whose archive this machine's cache fetched) and one Flux made for a
// HelmRelease (from a HelmRepository), each with a display name that says
// who made it and its chart and version; each filter narrows the listing
// (namespace, owner, label_selector over Helm's labels); a namespace that
// holds nothing lists nothing, and one that does not exist is an error
// naming `namespace`. `terraform query -generate-config-out` writes a
// resource and an import block by identity per release, with the chart
// block a user writes (repository, chart, version; never a path), which
// applies unchanged: no new Helm revision, no object written, an empty next
// plan. A release another configuration's stevedore_helmrelease made is
// listed with its owner and a warning, and the import generated for it
// fails with the ownership error, taking nothing.
func TestAccQuery_helmReleases(t *testing.T) {
	t.Parallel()
	repo := startTestRepo(t, testenv.HelmRepoOptions{}, "1.1.0")
	kc := testClient(t)
	testenv.InstallFluxCRDs(t, kc)
	queryCLIs(t, func(t *testing.T, c cli) {
		ns, apps, empty, owned := uniqueNamespace(t, "q-rel"), uniqueNamespace(t, "q-apps"), uniqueNamespace(t, "q-empty"),
			uniqueNamespace(t, "q-owned")
		cacheDir := t.TempDir()
		kubeconfig := testenv.Need(t).Cluster.Kubeconfig
		provider := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))

		// The archive the helm CLIs install, fetched into this machine's
		// cache from the repository.
		other := newWorkspace(t, c, provider+fmt.Sprintf(`
resource "stevedore_helmchart_artifact" "remote" {
  repository = %s
  chart      = "podinfo"
  version    = "1.1.0"
}

output "remote" {
  value = stevedore_helmchart_artifact.remote.path
}
`, hcl(repo.URL())))
		other.must("apply", "-auto-approve", "-input=false")
		archive := strings.TrimSpace(other.must("output", "-raw", "remote"))
		var releases [][2]string
		for _, in := range [][2]string{{"helm3", "h3"}, {"helm4", "h4"}} {
			if _, err := testenv.HelmCLI(testenv.Context(t), kubeconfig, in[0], "install", in[1], archive, "--namespace", ns,
				"--set", "replicaCount=2"); err != nil {
				t.Fatal(err)
			}
			releases = append(releases, [2]string{ns, in[1]})
		}
		// A release Flux made for the HelmRelease ns/web, from a
		// HelmRepository, its objects in apps.
		for _, o := range []struct {
			apiVersion, kind, name string
			spec                   map[string]any
		}{
			{"source.toolkit.fluxcd.io/v1", "HelmRepository", "podinfo", map[string]any{"url": repo.URL(), "interval": "10m"}},
			{"helm.toolkit.fluxcd.io/v2", "HelmRelease", "web", map[string]any{"interval": "10m", "targetNamespace": apps,
				"chart": map[string]any{"spec": map[string]any{"chart": "podinfo", "version": "1.1.0",
					"sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"}}}}},
		} {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": o.spec}}
			u.SetAPIVersion(o.apiVersion)
			u.SetKind(o.kind)
			u.SetNamespace(ns)
			u.SetName(o.name)
			if err := kc.Create(testenv.Context(t), u); err != nil {
				t.Fatal(err)
			}
		}
		fluxName, err := testenv.FluxInstall(kubeconfig, ns, "web", apps, archive, map[string]any{"replicaCount": 2})
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, [2]string{ns, fluxName})
		// Another configuration's stevedore_helmrelease.
		mine := newWorkspace(t, c, releaseConfig(cacheDir, chartCopy(t, "1.0.0"), owned, ""))
		mine.must("apply", "-auto-approve", "-input=false")

		w := newWorkspace(t, c, provider)
		all := listBlock("stevedore_helmrelease", "all", "    namespace = "+hcl(ns))
		for _, tc := range []struct {
			what, config string
			want, not    []string
		}{
			{"namespace", "    namespace = " + hcl(ns),
				[]string{ns + "/h3: chart podinfo 1.1.0, deployed, made by helm", ns + "/h4: chart podinfo 1.1.0, deployed, made by helm",
					ns + "/" + fluxName + ": chart podinfo 1.1.0, deployed, made by flux (HelmRelease " + ns + "/web)"},
				[]string{owned + "/"}},
			{"owner helm", "    namespace = " + hcl(ns) + "\n    owner = \"helm\"", []string{ns + "/h3:", ns + "/h4:"}, []string{fluxName}},
			{"owner flux", "    namespace = " + hcl(ns) + "\n    owner = \"flux\"", []string{ns + "/" + fluxName + ":"}, []string{ns + "/h3:", ns + "/h4:"}},
			{"label_selector", "    namespace = " + hcl(ns) + "\n    label_selector = \"name=h4\"", []string{ns + "/h4:"}, []string{ns + "/h3:", fluxName}},
			{"every namespace, owner stevedore", "    owner = \"stevedore\"",
				[]string{owned + "/podinfo: chart podinfo 1.0.0, deployed, made by stevedore (stevedore_helmrelease " + owned + "/podinfo)",
					"Release owned by a stevedore_helmrelease"},
				[]string{ns + "/h3:", fluxName}},
		} {
			out, code := query(w, listBlock("stevedore_helmrelease", "r", tc.config))
			if code != 0 {
				t.Errorf("%s query by %s: exit %d\n%s", c.name, tc.what, code, out)
				continue
			}
			f := flat(out)
			for _, s := range tc.want {
				if !strings.Contains(f, s) {
					t.Errorf("%s query by %s does not list %q:\n%s", c.name, tc.what, s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(f, s) {
					t.Errorf("%s query by %s lists %q:\n%s", c.name, tc.what, s, out)
				}
			}
		}

		// A namespace that holds nothing lists nothing; one that does not
		// exist is an error naming namespace; bad filters fail before any
		// listing, naming their attribute.
		out, code := query(w, listBlock("stevedore_helmrelease", "r", "    namespace = "+hcl(empty)))
		if code != 0 || !strings.Contains(flat(out), "list.stevedore_helmrelease.r] returned 0 results") {
			t.Errorf("%s query of an empty namespace: exit %d, want 0 results\n%s", c.name, code, out)
		}
		for _, tc := range []struct{ config, want, attr string }{
			{"    namespace = \"q-no-such-namespace\"", `namespace "q-no-such-namespace" does not exist`, "namespace"},
			{"    owner = \"hashicorp\"", "value must be one of", "owner"},
			{"    label_selector = \"app in (a\"", "is not a Kubernetes label selector", "label_selector"},
		} {
			out, code := query(w, listBlock("stevedore_helmrelease", "r", tc.config))
			if f := flat(out); code == 0 || !strings.Contains(f, tc.want) || !strings.Contains(f, tc.attr) {
				t.Errorf("%s query with %s: exit %d, want an error naming %s that says %q:\n%s", c.name, tc.config, code, tc.attr, tc.want, out)
			}
		}

		// Generate, then apply unchanged.
		revisions := revisionsOf(t, releases)
		objects := objectVersions(t, ns)
		maps.Copy(objects, prefixed("apps:", objectVersions(t, apps)))
		_, gen := generateByQuery(t, w, all)
		if n := strings.Count(gen, `resource "stevedore_helmrelease"`); n != 3 {
			t.Fatalf("%s: %d resource blocks generated, want 3:\n%s", c.name, n, gen)
		}
		if strings.Count(gen, "identity = {") != 3 {
			t.Errorf("%s: want 3 import blocks by identity:\n%s", c.name, gen)
		}
		if strings.Contains(gen, cacheDir) || regexp.MustCompile(`"/`).MatchString(gen) {
			t.Errorf("%s: the generated file names a path:\n%s", c.name, gen)
		}
		g := flat(gen)
		for _, s := range []string{"repository = " + hcl(repo.URL()), `chart = "podinfo"`, `version = "1.1.0"`, "target_namespace = " + hcl(apps),
			`name = "web"`, `name = "h3"`, `name = "h4"`} {
			if !strings.Contains(g, s) {
				t.Errorf("%s: the generated file lacks %s", c.name, s)
			}
		}
		if err := os.Remove(filepath.Join(w.dir, "list.tfquery.hcl")); err != nil {
			t.Fatal(err)
		}
		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the generated configuration: exit %d\n%s", c.name, code, out)
		}
		if after := revisionsOf(t, releases); !maps.EqualFunc(revisions, after, func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }) {
			t.Errorf("%s: revisions changed by the adoption:\nbefore %v\nafter  %v", c.name, revisions, after)
		}
		after := objectVersions(t, ns)
		maps.Copy(after, prefixed("apps:", objectVersions(t, apps)))
		if !maps.Equal(objects, after) {
			t.Errorf("%s: objects written by the adoption:\nbefore %v\nafter  %v", c.name, objects, after)
		}
		w.planEmpty()

		// Another configuration's release: listed, its generated import
		// refused with the ownership error; nothing taken.
		ownedRevs := revisionsOf(t, [][2]string{{owned, "podinfo"}})
		// The cache holds the release's archive, so that the generated
		// chart block is complete (chart.digest) and the plan reaches the
		// import.
		v := newWorkspace(t, c, provider)
		_, gen = generateByQuery(t, v, listBlock("stevedore_helmrelease", "owned", "    namespace = "+hcl(owned)))
		if strings.Count(gen, `resource "stevedore_helmrelease"`) != 1 {
			t.Fatalf("%s: want the owned release's block:\n%s", c.name, gen)
		}
		if err := os.Remove(filepath.Join(v.dir, "list.tfquery.hcl")); err != nil {
			t.Fatal(err)
		}
		out, code = v.run("plan", "-input=false")
		if f := flat(out); code == 0 || !strings.Contains(f, "stevedore does not take over a release that this resource instance did not install") ||
			!strings.Contains(f, "is another instance of a stevedore_helmrelease") || !strings.Contains(f, `with the ID "`+owned+`/podinfo"`) {
			t.Errorf("%s: plan of the generated import of another configuration's release: exit %d, want the ownership error\n%s", c.name, code, out)
		}
		if after := revisionsOf(t, [][2]string{{owned, "podinfo"}}); !maps.EqualFunc(ownedRevs, after, func(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }) {
			t.Errorf("%s: the owned release changed: %v, then %v", c.name, ownedRevs, after)
		}
		mine.planEmpty()
	})
}

// prefixed is m with each key prefixed by p.
func prefixed(p string, m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[p+k] = v
	}
	return out
}

// TestAccQuery_resourceSets: the stevedore_resourceset list resource lists
// a stevedore set another workspace applied (whose state is lost) and a
// flux-operator ResourceSet, each with a display name saying who made it;
// each filter narrows the listing. `terraform query -generate-config-out`
// writes the stevedore set's resources as it applied them, warning that the
// Secret among them has its data in the generated file, and the
// flux-operator ResourceSet's spec with take_over_from; applied unchanged,
// the stevedore set's objects are not written, the ResourceSet's objects
// keep their content (the take-over writes only the set's owner labels, as
// the plan says), and the next plan is empty. A namespace that does not
// exist is an error naming `namespace`.
func TestAccQuery_resourceSets(t *testing.T) {
	t.Parallel()
	kc := testClient(t)
	testenv.InstallResourceSetCRD(t, kc)
	queryCLIs(t, func(t *testing.T, c cli) {
		ctx := testenv.Context(t)
		ns, fo := uniqueNamespace(t, "q-sets"), uniqueNamespace(t, "q-fo")
		other := newWorkspace(t, c, providerBlock("")+fmt.Sprintf(`
resource "stevedore_resourceset" "apps" {
  name      = "apps"
  namespace = %q
  common_metadata {
    labels = { team = "a" }
  }
  resources = [
    { apiVersion = "v1", kind = "ConfigMap", metadata = { name = "conf" }, data = { "app.yaml" = "a: 1\n" } },
    { apiVersion = "v1", kind = "Secret", metadata = { name = "token" }, data = { token = base64encode("s3cret") } },
  ]
}
`, ns))
		other.must("apply", "-auto-approve", "-input=false")
		// A flux-operator ResourceSet and the object it applied.
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg-a", "namespace": fo, "labels": map[string]any{
				"resourceset.fluxcd.controlplane.io/name": "tenants", "resourceset.fluxcd.controlplane.io/namespace": fo}},
			"data": map[string]any{"tenant": "a"}}}
		if err := kc.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("flux-operator"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
		rs := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
			"inputs":            []any{map[string]any{"tenant": "a"}},
			"resourcesTemplate": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-<< inputs.tenant >>\ndata:\n  tenant: << inputs.tenant >>\n",
		}}}
		rs.SetGroupVersionKind(resourceset.FluxOperatorResourceSet)
		rs.SetNamespace(fo)
		rs.SetName("tenants")
		rs.SetLabels(map[string]string{"team": "platform"})
		rs.SetAnnotations(map[string]string{"fluxcd.controlplane.io/reconcile": "disabled"})
		if err := kc.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}

		w := newWorkspace(t, c, providerBlock(""))
		stevedoreSet := ns + "/apps: 2 object(s), made by stevedore (owner "
		foSet := fo + "/tenants: 0 object(s), made by flux-operator" // no status inventory
		for _, tc := range []struct {
			what, config string
			want, not    []string
		}{
			{"namespace", "    namespace = " + hcl(ns), []string{stevedoreSet}, []string{foSet}},
			{"owner flux-operator", "    owner = \"flux-operator\"", []string{foSet}, []string{stevedoreSet}},
			{"owner stevedore", "    owner = \"stevedore\"\n    namespace = " + hcl(ns), []string{stevedoreSet}, []string{foSet}},
			{"label_selector", "    label_selector = \"team=platform\"", []string{foSet}, []string{stevedoreSet}},
			{"label_selector of a set's objects", "    label_selector = \"team=a\"\n    namespace = " + hcl(ns), []string{stevedoreSet}, nil},
		} {
			out, code := query(w, listBlock("stevedore_resourceset", "s", tc.config))
			if code != 0 {
				t.Errorf("%s query by %s: exit %d\n%s", c.name, tc.what, code, out)
				continue
			}
			f := flat(out)
			for _, s := range tc.want {
				if !strings.Contains(f, s) {
					t.Errorf("%s query by %s does not list %q:\n%s", c.name, tc.what, s, out)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(f, s) {
					t.Errorf("%s query by %s lists %q:\n%s", c.name, tc.what, s, out)
				}
			}
		}
		out, code := query(w, listBlock("stevedore_resourceset", "s", "    namespace = \"q-no-such-namespace\""))
		if f := flat(out); code == 0 || !strings.Contains(f, `namespace "q-no-such-namespace" does not exist`) {
			t.Errorf("%s query of a namespace that does not exist: exit %d\n%s", c.name, code, out)
		}

		versions := func(namespace string) map[string]string {
			out := map[string]string{}
			for _, kind := range []string{"ConfigMap", "Secret"} {
				list := &unstructured.UnstructuredList{}
				list.SetAPIVersion("v1")
				list.SetKind(kind + "List")
				if err := kc.List(ctx, list, client.InNamespace(namespace)); err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					out[kind+"/"+o.GetName()] = o.GetResourceVersion()
				}
			}
			return out
		}
		before := versions(ns)
		lists := listBlock("stevedore_resourceset", "mine", "    namespace = "+hcl(ns)) +
			listBlock("stevedore_resourceset", "fo", "    namespace = "+hcl(fo))
		out, gen := generateByQuery(t, w, lists)
		if n := strings.Count(gen, `resource "stevedore_resourceset"`); n != 2 {
			t.Fatalf("%s: %d resource blocks generated, want 2:\n%s", c.name, n, gen)
		}
		g := flat(gen)
		for _, s := range []string{`kind = "ConfigMap"`, `kind = "Secret"`, `team = "a"`, `take_over_from = ["flux-operator"]`,
			"cfg-<< inputs.tenant >>", `tenant = "a"`} {
			if !strings.Contains(g, s) {
				t.Errorf("%s: the generated file lacks %s", c.name, s)
			}
		}
		if f := flat(out); !strings.Contains(f, "Secret data in the generated configuration") || !strings.Contains(f, "Secret "+ns+"/token of resource set "+ns+"/apps") {
			t.Errorf("%s: no warning naming the Secret written into the generated file:\n%s", c.name, out)
		}
		if err := os.Remove(filepath.Join(w.dir, "list.tfquery.hcl")); err != nil {
			t.Fatal(err)
		}
		if out, code := w.apply(); code != 0 {
			t.Fatalf("%s apply of the generated configuration: exit %d\n%s", c.name, code, out)
		}
		if after := versions(ns); !maps.Equal(before, after) {
			t.Errorf("%s: objects written by the adoption: before %v, after %v", c.name, before, after)
		}
		cm := &unstructured.Unstructured{}
		cm.SetAPIVersion("v1")
		cm.SetKind("ConfigMap")
		if err := kc.Get(ctx, client.ObjectKey{Namespace: fo, Name: "cfg-a"}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.GetLabels()["stevedore.dev/resourceset-name"] != "tenants" || fmt.Sprint(cm.Object["data"]) != "map[tenant:a]" {
			t.Errorf("%s: the flux-operator set's object after the take-over: labels %v, data %v", c.name, cm.GetLabels(), cm.Object["data"])
		}
		w.planEmpty()
	})
}

// TestAccSchema_loadsUnderEveryCLI: the provider's schema, list resources
// included, loads under every CLI the provider supports: OpenTofu and
// Terraform 1.5.7, which know no list resources, validate a configuration
// of its listing data sources as before; the newest Terraform also
// validates a query file of both list resources.
func TestAccSchema_loadsUnderEveryCLI(t *testing.T) {
	t.Parallel()
	testenv.Need(t) // the provider block's cluster
	all := needCLIs(t, false, append(clis(t, false), oldestCLI())...)
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t, c, providerBlock("")+`
data "stevedore_helmreleases" "all" {
  owner = "helm"
}

data "stevedore_resourcesets" "all" {}
`)
			if out, code := w.run("validate"); code != 0 {
				t.Fatalf("%s validate: exit %d\n%s", c.name, code, out)
			}
			if why, err := c.lacks(cliQuery); err != nil || why != "" {
				return
			}
			lists := listBlock("stevedore_helmrelease", "r", `    owner = "flux"`) + listBlock("stevedore_resourceset", "s", `    owner = "flux-operator"`)
			if err := os.WriteFile(filepath.Join(w.dir, "list.tfquery.hcl"), []byte(lists), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, code := w.run("validate", "-query"); code != 0 {
				t.Fatalf("%s validate -query: exit %d\n%s", c.name, code, out)
			}
		})
	}
}

// TestQueryFiftyReleases measures `terraform query` of 50 releases the helm4
// CLI installed, listing only and with -generate-config-out (which reads
// each release as its import does), beside `terraform plan` of the
// stevedore_helmreleases data source over the same 50, under the newest
// Terraform: the wall time of each and the provider's peak RSS (from
// /usr/bin/time, when the machine has it). A measure, not an assertion of
// its figures: it runs only with STEVEDORE_MEASURE_QUERY=1 (and TF_ACC).
func TestQueryFiftyReleases(t *testing.T) {
	if os.Getenv("STEVEDORE_MEASURE_QUERY") == "" {
		t.Skip("a measure: set STEVEDORE_MEASURE_QUERY=1 to run it")
	}
	needAcc(t)
	var tf cli
	for _, c := range clis(t, false) {
		if c.name == "terraform" {
			tf = c
		}
	}
	tf.need(t, cliQuery)
	ns := uniqueNamespace(t, "query50")
	cacheDir, chartDir := t.TempDir(), chartCopy(t, "1.0.0")
	kc := testenv.Need(t).Cluster.Kubeconfig
	provider := providerBlock(fmt.Sprintf("cache_dir = %s", hcl(cacheDir)))
	w := newWorkspace(t, tf, provider+fmt.Sprintf(`
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
	for i := range n {
		if _, err := testenv.HelmCLI(testenv.Context(t), kc, "helm4", "install", fmt.Sprintf("r%02d", i), archive, "--namespace", ns); err != nil {
			t.Fatal(err)
		}
	}
	// A workspace whose dev override runs the provider under /usr/bin/time,
	// which appends each provider process's peak RSS to mem.log.
	m := newWorkspace(t, tf, provider)
	memLog := filepath.Join(m.dir, "mem.log")
	wrapDir := filepath.Join(m.dir, "wrap")
	if err := os.MkdirAll(wrapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(builtProvider(t), "terraform-provider-stevedore")
	wrapper := fmt.Sprintf("#!/bin/sh\nexec /usr/bin/time -f '%%M %%U %%S' -a -o %q %q \"$@\"\n", memLog, bin)
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		t.Log("no /usr/bin/time: no peak RSS")
		wrapper = fmt.Sprintf("#!/bin/sh\nexec %q \"$@\"\n", bin)
	}
	if err := os.WriteFile(filepath.Join(wrapDir, "terraform-provider-stevedore"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	rc := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    \"stevedore-dev/stevedore\" = %q\n  }\n  direct {}\n}\n", wrapDir)
	if err := os.WriteFile(m.rc, []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	measure := func(what string, args ...string) {
		t.Helper()
		_ = os.Remove(memLog)
		start := time.Now()
		out := m.must(args...)
		took := time.Since(start)
		kib, _ := providerUsage(memLog)
		t.Logf("%s over %d releases: %s, provider peak RSS %.1f MiB", what, n, took.Round(time.Millisecond), float64(kib)/1024)
		if !strings.Contains(out, ns+"/r49") && !strings.Contains(out, `"`+ns+`/r49"`) && what != "query -generate-config-out" {
			t.Errorf("%s does not list %s/r49:\n%s", what, ns, out)
		}
	}
	lists := listBlock("stevedore_helmrelease", "all", "    namespace = "+hcl(ns))
	if err := os.WriteFile(filepath.Join(m.dir, "list.tfquery.hcl"), []byte(lists), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		measure("terraform query", "query")
		measure("query -generate-config-out", "query", "-generate-config-out=generated.tf")
		if err := os.Remove(filepath.Join(m.dir, "generated.tf")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(m.dir, "list.tfquery.hcl")); err != nil {
		t.Fatal(err)
	}
	m.write(provider + fmt.Sprintf(`
data "stevedore_helmreleases" "all" {
  namespace = %q
}

output "names" {
  value = keys(data.stevedore_helmreleases.all.releases)
}
`, ns))
	for range 2 {
		measure("plan of the stevedore_helmreleases data source", "plan", "-input=false")
	}
}
