package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	chartcommonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"
)

func TestChartsDir_absoluteWithEveryChart(t *testing.T) {
	dir := ChartsDir()
	if !filepath.IsAbs(dir) {
		t.Fatalf("ChartsDir() = %q, want an absolute path", dir)
	}
	for _, name := range []string{"podinfo", "withdep", "crds"} {
		if _, err := os.Stat(filepath.Join(dir, name, "Chart.yaml")); err != nil {
			t.Errorf("chart %s: %v", name, err)
		}
	}
}

func TestPackageChart_keepsVersionWhenEmpty(t *testing.T) {
	ch := packageAndLoad(t, "podinfo", "")
	if ch.Metadata.Version != "1.0.0" || ch.Metadata.AppVersion != "6.0.0" {
		t.Errorf("version %q appVersion %q, want 1.0.0 and 6.0.0", ch.Metadata.Version, ch.Metadata.AppVersion)
	}
}

func TestPackageChart_overridesVersion(t *testing.T) {
	for _, version := range []string{"1.1.0", "2.0.0-rc.1", "1.2.0+build.7"} {
		t.Run(version, func(t *testing.T) {
			dest := t.TempDir()
			path, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), version, dest)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dest, "podinfo-"+version+".tgz"); path != want {
				t.Errorf("path = %q, want %q", path, want)
			}
			ch, err := loader.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Metadata.Version != version {
				t.Errorf("packaged version = %q, want %q", ch.Metadata.Version, version)
			}
			// The source is untouched.
			src, err := loader.LoadDir(filepath.Join(ChartsDir(), "podinfo"))
			if err != nil {
				t.Fatal(err)
			}
			if src.Metadata.Version != "1.0.0" {
				t.Errorf("source version changed to %q", src.Metadata.Version)
			}
		})
	}
}

func TestPackageChart_rejectsInvalidVersion(t *testing.T) {
	_, err := PackageChart(filepath.Join(ChartsDir(), "podinfo"), "not-a-version", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "podinfo") {
		t.Fatalf("err = %v, want a validation error naming the chart", err)
	}
}

func TestPackageChart_missingSourceIsAnError(t *testing.T) {
	_, err := PackageChart(filepath.Join(t.TempDir(), "nope"), "", t.TempDir())
	if err == nil {
		t.Fatal("want an error for a missing chart directory")
	}
}

func TestPackageChart_keepsExtraValuesFiles(t *testing.T) {
	ch := packageAndLoad(t, "podinfo", "")
	var prod []byte
	for _, f := range ch.Files {
		if f.Name == "values-prod.yaml" {
			prod = f.Data
		}
	}
	if !bytes.Contains(prod, []byte("replicaCount: 2")) {
		t.Fatalf("values-prod.yaml in archive = %q, want replicaCount: 2", prod)
	}
}

func TestPackageChart_vendorsFileDependency(t *testing.T) {
	ch := packageAndLoad(t, "withdep", "")
	deps := ch.Dependencies()
	if len(deps) != 1 || deps[0].Name() != "podinfo" || deps[0].Metadata.Version != "1.0.0" {
		t.Fatalf("dependencies = %v, want podinfo 1.0.0", chartNames(deps))
	}
	// The source directory stays as it was: no charts/ or Chart.lock.
	for _, name := range []string{"charts", "Chart.lock"} {
		if _, err := os.Stat(filepath.Join(ChartsDir(), "withdep", name)); !os.IsNotExist(err) {
			t.Errorf("%s written into the source directory (stat: %v)", name, err)
		}
	}
}

func TestPackageChart_rejectsUnresolvableDependency(t *testing.T) {
	src := t.TempDir()
	writeTestFile(t, filepath.Join(src, "Chart.yaml"), `apiVersion: v2
name: remote
version: 0.1.0
dependencies:
  - name: nginx
    version: "1.x"
    repository: https://charts.example.com
`)
	_, err := PackageChart(src, "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `dependency "nginx"`) {
		t.Fatalf("err = %v, want an error naming the dependency", err)
	}

	writeTestFile(t, filepath.Join(src, "Chart.yaml"), `apiVersion: v2
name: remote
version: 0.1.0
dependencies:
  - name: podinfo
    version: "2.x"
    repository: file://`+filepath.Join(ChartsDir(), "podinfo")+`
`)
	_, err = PackageChart(src, "", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("err = %v, want a version mismatch error", err)
	}
}

// The test charts are what later tests install; these render them as Helm
// would, so that a broken template shows up here rather than as an
// install failure in a cluster test.

func TestPodinfoChart_rendersDefaults(t *testing.T) {
	ch := packageAndLoad(t, "podinfo", "")
	objs := renderChart(t, ch, nil)

	deploy := objs["Deployment/rel"]
	if got := lookupField(deploy, "spec", "replicas"); got != float64(1) {
		t.Errorf("replicas = %v, want 1", got)
	}
	containers, _ := lookupField(deploy, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 || lookupField(containers[0].(map[string]any), "image") != "ghcr.io/stefanprodan/podinfo:6.0.0" {
		t.Errorf("containers = %v, want the podinfo 6.0.0 image", containers)
	}
	if objs["Service/rel"] == nil {
		t.Error("no Service rel")
	}
	if got := lookupField(objs["ConfigMap/rel"], "data", "greeting"); got != "hello" {
		t.Errorf("ConfigMap greeting = %v, want hello", got)
	}
	pod := objs["Pod/rel-test"]
	if got := lookupField(pod, "metadata", "annotations", "helm.sh/hook"); got != "test" {
		t.Errorf("test pod hook annotation = %v, want test", got)
	}
	if got := lookupField(pod, "metadata", "labels", "stevedore.dev/test-fail"); got != nil {
		t.Errorf("test-fail label = %v, want none by default", got)
	}
}

func TestPodinfoChart_rendersValues(t *testing.T) {
	ch := packageAndLoad(t, "podinfo", "")
	prod, err := chartcommon.ReadValuesFile(filepath.Join(ChartsDir(), "podinfo", "values-prod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vals := prod.AsMap()
	vals["test"] = map[string]any{"fail": true}
	vals["config"] = map[string]any{"greeting": "hi", "count": 3}
	vals["image"] = map[string]any{"tag": "6.1.0"}
	objs := renderChart(t, ch, vals)

	if got := lookupField(objs["Deployment/rel"], "spec", "replicas"); got != float64(2) {
		t.Errorf("replicas = %v, want 2 from values-prod.yaml", got)
	}
	containers, _ := lookupField(objs["Deployment/rel"], "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 || lookupField(containers[0].(map[string]any), "image") != "ghcr.io/stefanprodan/podinfo:6.1.0" {
		t.Errorf("containers = %v, want the podinfo 6.1.0 image", containers)
	}
	data, _ := lookupField(objs["ConfigMap/rel"], "data").(map[string]any)
	if data["greeting"] != "hi" || data["count"] != "3" {
		t.Errorf("ConfigMap data = %v, want greeting hi and count \"3\"", data)
	}
	if got := lookupField(objs["Pod/rel-test"], "metadata", "labels", "stevedore.dev/test-fail"); got != "true" {
		t.Errorf("test-fail label = %v, want \"true\"", got)
	}
}

func TestWithdepChart_rendersSubchartWithParentValues(t *testing.T) {
	ch := packageAndLoad(t, "withdep", "")
	objs := renderChart(t, ch, nil)
	if got := lookupField(objs["ConfigMap/rel-withdep"], "data", "message"); got != "from-withdep" {
		t.Errorf("withdep ConfigMap message = %v, want from-withdep", got)
	}
	if got := lookupField(objs["ConfigMap/rel"], "data", "greeting"); got != "hello-from-withdep" {
		t.Errorf("subchart ConfigMap greeting = %v, want the parent's value", got)
	}
	if objs["Deployment/rel"] == nil {
		t.Error("subchart Deployment not rendered")
	}
}

func TestCRDsChart_rendersCRDAndCustomResource(t *testing.T) {
	ch := packageAndLoad(t, "crds", "")
	crds := ch.CRDObjects()
	if len(crds) != 1 {
		t.Fatalf("CRDs = %d, want 1", len(crds))
	}
	var crd map[string]any
	if err := yaml.Unmarshal(crds[0].File.Data, &crd); err != nil {
		t.Fatal(err)
	}
	if lookupField(crd, "metadata", "name") != "widgets.stevedore.dev" || lookupField(crd, "spec", "scope") != "Namespaced" {
		t.Errorf("CRD = %v, want namespaced widgets.stevedore.dev", crd["metadata"])
	}
	widget := renderChart(t, ch, nil)["Widget/rel"]
	if widget["apiVersion"] != "stevedore.dev/v1" || lookupField(widget, "spec", "size") != "small" {
		t.Errorf("Widget = %v", widget)
	}
}

// packageAndLoad packages a test chart into a temporary directory and loads
// the archive back, so that tests see what a repository would serve.
func packageAndLoad(t *testing.T, name, version string) *chart.Chart {
	t.Helper()
	path, err := PackageChart(filepath.Join(ChartsDir(), name), version, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// renderChart renders ch as release "rel" (tests included) and returns its
// objects by "Kind/name".
func renderChart(t *testing.T, ch *chart.Chart, vals map[string]any) map[string]map[string]any {
	t.Helper()
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		t.Fatal(err)
	}
	renderVals, err := chartcommonutil.ToRenderValues(ch, vals, chartcommon.ReleaseOptions{
		Name: "rel", Namespace: "default", Revision: 1, IsInstall: true,
	}, chartcommon.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, renderVals)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(content, "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s: invalid YAML: %v\n%s", name, err, doc)
			}
			if obj == nil {
				continue
			}
			key, _ := obj["kind"].(string)
			key += "/" + lookupField(obj, "metadata", "name").(string)
			if _, dup := objs[key]; dup {
				t.Fatalf("%s rendered twice", key)
			}
			objs[key] = obj
		}
	}
	return objs
}

// lookup walks nested maps; it returns nil where a key is missing.
func lookupField(obj map[string]any, keys ...string) any {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func chartNames(charts []*chart.Chart) []string {
	names := make([]string, 0, len(charts))
	for _, c := range charts {
		names = append(names, c.Name()+"-"+c.Metadata.Version)
	}
	return names
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
