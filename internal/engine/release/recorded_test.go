package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// stored is the chart of archive p as Helm storage gives it back: JSON
// encoded and decoded (subcharts are not part of it).
func stored(t *testing.T, p string) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	var out chart.Chart
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// ChartIs proves an archive by the files Helm stored in the release: the
// release's own archive passes, an archive of the same name and version with
// another template does not, and a chart with subcharts cannot be proven.
func TestImported_ChartIs(t *testing.T) {
	own, other := twoArchivesOfOneVersion(t)
	imp := &Imported{recorded: stored(t, own)}
	if err := imp.ChartIs(own); err != nil {
		t.Fatalf("the release's own archive: %v", err)
	}
	if err := imp.ChartIs(other); err == nil || !strings.Contains(err.Error(), "template templates/extra-from-elsewhere.yaml differs") {
		t.Fatalf("another archive of podinfo 1.0.0: %v", err)
	}
	withDep, err := testenv.PackageChart(filepath.Join(testenv.ChartsDir(), "withdep"), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	imp = &Imported{recorded: stored(t, withDep)}
	if err := imp.ChartIs(withDep); err == nil || !strings.Contains(err.Error(), "subchart") {
		t.Fatalf("a chart with subcharts: %v", err)
	}
	if err := (&Imported{}).ChartIs(own); err == nil {
		t.Fatal("a release without a chart proved an archive")
	}
}

// A release whose chart digest is unknown (imported without a proven
// archive) is compared with the desired chart by content: another chart of
// the same name and version is out of sync; the same chart is not; with a
// known digest, the digest decides.
func TestOutOfSync_unknownDigestComparesContent(t *testing.T) {
	own, other := twoArchivesOfOneVersion(t)
	load := func(p string) *chart.Chart {
		ch, err := loader.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return ch
	}
	rls := &helmrelease.Release{Chart: stored(t, own)}
	cur := &Snapshot{ConfigDigest: DigestValues(nil)}
	in := syncInputs{chartName: "podinfo", chartVersion: "1.0.0", chartDigest: "sha256:desired", configDigest: DigestValues(nil), chart: load(own)}
	if r := outOfSync(rls, cur, &Status{}, in); r != "" {
		t.Fatalf("the release's own chart: %s", r)
	}
	in.chart = load(other)
	if r := outOfSync(rls, cur, &Status{}, in); !strings.Contains(r, "template templates/extra-from-elsewhere.yaml") {
		t.Fatalf("another chart of podinfo 1.0.0: %q", r)
	}
	cur.ChartDigest = "sha256:desired"
	if r := outOfSync(rls, cur, &Status{}, in); r != "" {
		t.Fatalf("known digest: %s", r)
	}
}

// twoArchivesOfOneVersion packages the podinfo test chart as 1.0.0 twice:
// own as it is, other with one template more, as two sources of one chart
// name and version would serve them.
func twoArchivesOfOneVersion(t *testing.T) (own, other string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "podinfo")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testenv.ChartsDir(), "podinfo"))); err != nil {
		t.Fatal(err)
	}
	var err error
	own, err = testenv.PackageChart(src, "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "templates", "extra-from-elsewhere.yaml"), []byte("# another source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err = testenv.PackageChart(src, "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return own, other
}
