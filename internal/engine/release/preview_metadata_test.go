package release

import (
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// emptyMetadataChart renders ConfigMaps whose labels and annotations are an
// empty key (YAML null: a `range` over an empty map under it), an empty map,
// or absent, as public charts do (ingress-nginx, traefik, bitnami nginx).
func emptyMetadataChart(t *testing.T) (string, string) {
	cm := func(name, meta string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-` + name + `
` + meta + `data:
  v: {{ .Values.v | quote }}
`
	}
	return writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: emptymeta\nversion: 0.1.0\n",
		"values.yaml": "v: one\nnone: {}\n",
		"templates/null-annotations.yaml": cm("null-annotations", `  annotations:
    {{- range $k, $v := .Values.none }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
`),
		"templates/null-labels.yaml": cm("null-labels", `  labels:
    {{- range $k, $v := .Values.none }}
    {{ $k }}: {{ $v | quote }}
    {{- end }}
`),
		"templates/null-both.yaml":  cm("null-both", "  labels:\n  annotations:\n"),
		"templates/empty-both.yaml": cm("empty-both", "  labels: {}\n  annotations: {}\n"),
		"templates/absent.yaml":     cm("absent", ""),
	})
}

// The plan of an upgrade lists only what the upgrade changes: an object whose
// template renders empty or null labels or annotations keeps Helm's
// ownership label and annotations, which Helm sets on every object it
// applies, so the plan does not show them removed.
func TestPlan_previewKeepsHelmMetadataOfEmptyLabelsAndAnnotations(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := emptyMetadataChart(t)
	spec := &Spec{Name: "em", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Values = map[string]any{"v": "two"}
	p, err := e.Plan(ctx, spec, st)
	if err != nil || p.Action != ActionUpgrade || p.Preview == nil || p.Preview.Unknown != "" {
		t.Fatalf("plan of the upgrade = %+v, %v", p, err)
	}
	got := changesOf(p)
	names := []string{"null-annotations", "null-labels", "null-both", "empty-both", "absent"}
	for _, n := range names {
		id := ns + "_em-" + n + "__ConfigMap"
		d := got[id]
		if d.Type != "update" || len(d.Changes) != 1 || d.Changes[0].Op != "replace" || d.Changes[0].Path != "/data/v" ||
			d.Changes[0].From != `"one"` || d.Changes[0].To != `"two"` {
			t.Errorf("%s: planned %+v, want only /data/v \"one\" -> \"two\"", n, d)
		}
	}
	if len(got) != len(names) {
		t.Errorf("plan lists %d objects, want %d: %+v", len(got), len(names), p.Preview.Changes)
	}

	if _, err := e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		live, ok := get(t, c, "v1", "ConfigMap", ns, "em-"+n)
		if !ok {
			t.Fatalf("%s is gone", n)
		}
		if a := live.GetAnnotations(); a["meta.helm.sh/release-name"] != "em" || a["meta.helm.sh/release-namespace"] != ns {
			t.Errorf("%s: after the upgrade, annotations = %v", n, a)
		}
		if l := live.GetLabels(); l["app.kubernetes.io/managed-by"] != "Helm" {
			t.Errorf("%s: after the upgrade, labels = %v", n, l)
		}
	}
}
