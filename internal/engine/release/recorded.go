package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// ChartIs reports whether the chart archive at path is the chart Helm
// recorded in the imported release: the same Chart.yaml, Chart.lock,
// templates, other files, default values and values schema. Helm stores
// these of the chart a release was made from, so an archive that differs in
// any of them is not the release's. Helm does not store subcharts: an
// archive that has subcharts cannot be proven to be the release's, and is
// not. The error says why an archive is not the release's.
func (imp *Imported) ChartIs(path string) error {
	rec := imp.recorded
	if rec == nil || rec.Metadata == nil {
		return fmt.Errorf("the release records no chart")
	}
	ch, err := loader.Load(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n := len(ch.Dependencies()); n > 0 {
		return fmt.Errorf("%s has %d subchart(s), which Helm does not store in a release: it cannot be compared", path, n)
	}
	if d := chartDiff(ch, rec); d != "" {
		return fmt.Errorf("%s: %s differs from the release's", path, d)
	}
	return nil
}

// chartDiff names the first of what Helm stores of a chart (Chart.yaml,
// Chart.lock, default values, values schema, templates, other files) that
// differs between ch and rec, "" when none does. Subcharts are not compared:
// Helm does not store them.
func chartDiff(ch, rec *chart.Chart) string {
	if ch == nil || rec == nil {
		return "chart"
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"Chart.yaml", ch.Metadata, rec.Metadata},
		{"Chart.lock", ch.Lock, rec.Lock},
		{"values", ch.Values, rec.Values},
	} {
		if !sameJSON(c.got, c.want) {
			return c.what
		}
	}
	if !bytes.Equal(ch.Schema, rec.Schema) {
		return "values.schema.json"
	}
	if d := diffFiles(ch.Templates, rec.Templates); d != "" {
		return "template " + d
	}
	if d := diffFiles(ch.Files, rec.Files); d != "" {
		return "file " + d
	}
	return ""
}

// sameJSON compares two values as Helm stores them: as JSON.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	// Through a generic value, so that a map's order and a number's Go type
	// (YAML's int, JSON's float64) do not count.
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	na, _ := json.Marshal(va)
	nb, _ := json.Marshal(vb)
	return bytes.Equal(na, nb)
}

// diffFiles names the first file that is in one list and not the other, or
// whose bytes differ; "" when the lists hold the same files.
func diffFiles(a, b []*common.File) string {
	index := func(fs []*common.File) map[string][]byte {
		m := make(map[string][]byte, len(fs))
		for _, f := range fs {
			if f != nil {
				m[f.Name] = f.Data
			}
		}
		return m
	}
	ma, mb := index(a), index(b)
	var names []string
	for n := range ma {
		names = append(names, n)
	}
	for n := range mb {
		if _, ok := ma[n]; !ok {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, strings.Compare)
	for _, n := range names {
		da, okA := ma[n]
		db, okB := mb[n]
		if !okA || !okB || !bytes.Equal(da, db) {
			return n
		}
	}
	return ""
}
