package provider

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestAttributePath_nestedNamesAndListIndices(t *testing.T) {
	for field, want := range map[string]path.Path{
		"values":                       path.Root("values"),
		"values_from[2]":               path.Root("values_from").AtListIndex(2),
		"upgrade.remediation.strategy": path.Root("upgrade").AtName("remediation").AtName("strategy"),
		"post_renderers[0].kustomize.patches[1].patch": path.Root("post_renderers").AtListIndex(0).AtName("kustomize").
			AtName("patches").AtListIndex(1).AtName("patch"),
		"drift_detection.ignore[0].paths[1]": path.Root("drift_detection").AtName("ignore").AtListIndex(0).AtName("paths").AtListIndex(1),
		"kubernetes.exec.api_version":        path.Root("kubernetes").AtName("exec").AtName("api_version"),
		"dependencies[1].ready_expr":         path.Root("dependencies").AtListIndex(1).AtName("ready_expr"),
		"":                                   path.Empty(),
	} {
		if got := attributePath(field); !got.Equal(want) {
			t.Errorf("attributePath(%q) = %s, want %s", field, got, want)
		}
	}
}

// Values read back from a release become the value HCL gives the same
// literal, so that an imported release plans no change of values.
func TestTFValue_roundTripsThroughValuesFrom(t *testing.T) {
	in := map[string]any{
		"replicaCount": int64(2),
		"ratio":        0.5,
		"image":        map[string]any{"tag": "1.0.0", "pull": true},
		"args":         []any{"a", int64(1)},
		"empty":        map[string]any{},
	}
	v, err := tfValue(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := valuesFrom(types.DynamicValue(v))
	if err != nil {
		t.Fatal(err)
	}
	want, got := mustJSON(t, in), mustJSON(t, out)
	if want != got {
		t.Fatalf("round trip: %s, want %s", got, want)
	}
}

func TestValuesFrom_yamlStringMustBeAMapping(t *testing.T) {
	out, err := valuesFrom(types.DynamicValue(types.StringValue("replicaCount: 2\nimage:\n  tag: \"1.0\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := mustJSON(t, out); got != `{"image":{"tag":"1.0"},"replicaCount":2}` {
		t.Fatalf("got %s", got)
	}
	if _, err := valuesFrom(types.DynamicValue(types.StringValue("- a\n- b\n"))); err == nil {
		t.Fatal("a YAML list is no values mapping")
	}
	if _, err := valuesFrom(types.DynamicValue(types.StringValue("a: [1"))); err == nil {
		t.Fatal("invalid YAML was accepted")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The chart block takes exactly one source; each wrong combination is an
// error on the attribute that is wrong, and an unknown value counts as set.
func TestValidateReleaseChart_exactlyOneSource(t *testing.T) {
	digest := types.StringValue("sha256:" + strings.Repeat("0", 64))
	chart := func(f func(c *releaseChartModel)) *releaseChartModel {
		c := nullReleaseChart()
		f(c)
		return c
	}
	for _, tc := range []struct {
		name string
		c    *releaseChartModel
		want []string // attribute path: summary
	}{
		{"artifact", chart(func(c *releaseChartModel) { c.Path, c.Digest = types.StringValue("/a.tgz"), digest }), nil},
		{"artifact not created yet", chart(func(c *releaseChartModel) { c.Path, c.Digest = types.StringUnknown(), types.StringUnknown() }), nil},
		{"repository", chart(func(c *releaseChartModel) {
			c.Repository, c.Chart = types.StringValue("https://charts.example"), types.StringValue("podinfo")
		}), nil},
		{"source_path", chart(func(c *releaseChartModel) { c.SourcePath = types.StringValue("./chart") }), nil},
		{"nothing", chart(func(*releaseChartModel) {}), []string{"chart: Missing chart source"}},
		{"path and source_path", chart(func(c *releaseChartModel) {
			c.Path, c.Digest, c.SourcePath = types.StringUnknown(), digest, types.StringValue("./chart")
		}), []string{"chart.source_path: Conflicting chart sources"}},
		{"path without digest", chart(func(c *releaseChartModel) { c.Path = types.StringValue("/a.tgz") }),
			[]string{"chart.digest: Missing chart digest"}},
		{"digest alone", chart(func(c *releaseChartModel) { c.Digest = digest }), nil},
		{"digest and source_path", chart(func(c *releaseChartModel) { c.SourcePath, c.Digest = types.StringValue("./chart"), digest }),
			[]string{"chart.source_path: Conflicting chart sources"}},
		{"repository without chart", chart(func(c *releaseChartModel) { c.Repository = types.StringValue("oci://r.example/charts") }),
			[]string{"chart.chart: Missing chart name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range validateReleaseChart(tc.c) {
				p := ""
				if wp, ok := d.(diag.DiagnosticWithPath); ok {
					p = wp.Path().String()
				}
				got = append(got, p+": "+d.Summary())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// values that are not an object say what was given in HCL's terms, not Go's;
// a list is a list of documents, and a bad one is named by its index.
func TestValuesFrom_notAnObjectSaysWhatWasGiven(t *testing.T) {
	list := types.DynamicValue(types.TupleValueMust([]attr.Type{types.NumberType}, []attr.Value{types.NumberValue(big.NewFloat(1))}))
	_, err := valuesFrom(list)
	if err == nil || err.Error() != "values[0] must be an object or a YAML string holding a mapping, got a number" {
		t.Fatalf("error %v", err)
	}
}
