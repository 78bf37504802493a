package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// helmTemplate is the reference: Helm's own install action as `helm
// template` runs it (client-only dry run, Replace), printed as `helm
// template` prints it.
func helmTemplate(t *testing.T, chartPath, name, namespace string, values map[string]any, opts TemplateOptions) (manifest, notes string) {
	t.Helper()
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	in := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)))
	in.DryRunStrategy, in.Replace = action.DryRunClient, true
	in.ReleaseName, in.Namespace, in.IncludeCRDs = name, namespace, opts.IncludeCRDs
	if opts.KubeVersion != "" {
		if in.KubeVersion, err = chartutil.ParseKubeVersion(opts.KubeVersion); err != nil {
			t.Fatal(err)
		}
	}
	in.APIVersions = opts.APIVersions
	reli, err := in.Run(ch, values)
	if err != nil {
		t.Fatal(err)
	}
	rel := reli.(*helmrelease.Release)
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		if opts.SkipTests && isTestHook(h) {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String(), rel.Info.Notes
}

func TestTemplateIsHelmTemplate(t *testing.T) {
	capsChart, capsDigest := writeChart(t, "1.0.0", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: caps\nversion: 1.0.0\n",
		"values.yaml": "greeting: hello\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
  namespace: {{ .Release.Namespace }}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
  greeting: {{ .Values.greeting | quote }}
`,
		"templates/NOTES.txt": "{{ .Release.Name }} in {{ .Release.Namespace }} says {{ .Values.greeting }}\n",
	})
	podinfoPath, podinfoDigest := podinfo(t, "1.0.0")
	crdsPath, crdsDigest := chartArchive(t, filepath.Join(testenv.ChartsDir(), "crds"), "1.0.0")
	withdepPath, withdepDigest := chartArchive(t, filepath.Join(testenv.ChartsDir(), "withdep"), "0.1.0")

	for _, tc := range []struct {
		name         string
		path, digest string
		values       map[string]any
		opts         TemplateOptions
		want         []string // in the manifest, so that the comparison is not of two empty renders
		wantObjects  int
		wantNotes    string
	}{
		{name: "podinfo", path: podinfoPath, digest: podinfoDigest, values: map[string]any{"replicaCount": 3},
			want: []string{"replicas: 3", "# Source: podinfo/templates/tests/test-connection.yaml", "helm.sh/hook: test"}, wantObjects: 4},
		{name: "podinfo skip tests", path: podinfoPath, digest: podinfoDigest, opts: TemplateOptions{SkipTests: true},
			want: []string{"kind: Deployment"}, wantObjects: 3},
		{name: "crds included", path: crdsPath, digest: crdsDigest, values: map[string]any{"size": "L"}, opts: TemplateOptions{IncludeCRDs: true},
			want: []string{"kind: CustomResourceDefinition", "kind: Widget", `size: "L"`}, wantObjects: 2},
		{name: "crds left out", path: crdsPath, digest: crdsDigest, want: []string{"kind: Widget"}, wantObjects: 1},
		{name: "dependency", path: withdepPath, digest: withdepDigest, want: []string{"kind: ConfigMap", "kind: Deployment"}},
		{name: "capabilities and notes", path: capsChart, digest: capsDigest, values: map[string]any{"greeting": "hi"},
			opts: TemplateOptions{KubeVersion: "v1.31.4", APIVersions: []string{"example.com/v1/Widget"}},
			want: []string{`kube: "v1.31.4"`, `widgets: "true"`, `greeting: "hi"`, "namespace: apps"}, wantObjects: 1,
			wantNotes: "rel in apps says hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: "ignored", Namespace: "elsewhere", ReleaseName: "rel", TargetNamespace: "apps",
				ChartPath: tc.path, ChartDigest: tc.digest, Values: tc.values}
			got, err := Template(context.Background(), spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			wantManifest, wantNotes := helmTemplate(t, tc.path, "rel", "apps", tc.values, tc.opts)
			if got.Manifest != wantManifest {
				t.Errorf("manifest differs from helm template's:\n--- got\n%s\n--- helm\n%s", got.Manifest, wantManifest)
			}
			if got.Notes != wantNotes || !strings.Contains(got.Notes, tc.wantNotes) {
				t.Errorf("notes %q, helm's %q, want them to hold %q", got.Notes, wantNotes, tc.wantNotes)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Manifest, w) {
					t.Errorf("manifest lacks %q:\n%s", w, got.Manifest)
				}
			}
			if tc.wantObjects > 0 && len(got.Objects) != tc.wantObjects {
				t.Errorf("%d objects, want %d", len(got.Objects), tc.wantObjects)
			}
			var joined []string
			for _, o := range got.Objects {
				if o.Object.GetKind() == "" || o.Object.GetName() == "" {
					t.Errorf("object without kind or name: %s", o.Manifest)
				}
				if !strings.Contains(got.Manifest, strings.TrimSpace(o.Manifest)) {
					t.Errorf("object's manifest is not a document of the manifest:\n%s", o.Manifest)
				}
				joined = append(joined, o.Object.GetKind())
			}
			t.Logf("objects: %s", strings.Join(joined, ", "))
			if got.ChartVersion == "" || got.ConfigDigest != DigestValues(tc.values) {
				t.Errorf("chart version %q, config digest %q", got.ChartVersion, got.ConfigDigest)
			}
		})
	}
}

func TestTemplatePostRenderers(t *testing.T) {
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "rel", Namespace: "apps", ChartPath: path, ChartDigest: digest,
		PostRenderers: []PostRenderer{{Kustomize: &Kustomize{Images: []KustomizeImage{{Name: "ghcr.io/stefanprodan/podinfo", NewTag: "6.9.9"}}}}}}
	got, err := Template(context.Background(), spec, TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Manifest, "image: ghcr.io/stefanprodan/podinfo:6.9.9") || strings.Contains(got.Manifest, "podinfo:6.0.0\n") {
		t.Errorf("the post-renderer did not set the image:\n%s", got.Manifest)
	}
	// No origin labels: helm template has none.
	if strings.Contains(got.Manifest, OriginNameLabel) {
		t.Errorf("the template carries a release's origin labels:\n%s", got.Manifest)
	}
}

func TestTemplateErrors(t *testing.T) {
	path, digest := podinfo(t, "1.0.0")
	other := "sha256:" + strings.Repeat("0", 64)
	for _, tc := range []struct {
		name  string
		spec  Spec
		opts  TemplateOptions
		field string
	}{
		{name: "digest", spec: Spec{ChartPath: path, ChartDigest: other}, field: "chart.digest"},
		{name: "path", spec: Spec{ChartPath: filepath.Join(t.TempDir(), "none.tgz")}, field: "chart.path"},
		{name: "kube version", spec: Spec{ChartPath: path, ChartDigest: digest}, opts: TemplateOptions{KubeVersion: "one"}, field: "kube_version"},
		{name: "values_from", spec: Spec{ChartPath: path, ValuesFrom: []ValuesReference{{Kind: "ConfigMap", Name: "x"}}}, field: "values_from"},
		{name: "values", spec: Spec{ChartPath: path, Values: map[string]any{"image": "not a map"}}, field: "values"},
		// What a release refuses to put on its objects: its origin labels.
		{name: "common_metadata", spec: Spec{ChartPath: path, ChartDigest: digest,
			CommonMetadata: CommonMetadata{Labels: map[string]string{OriginNameLabel: "other"}}}, field: "common_metadata.labels"},
		{name: "common_metadata annotation", spec: Spec{ChartPath: path, ChartDigest: digest,
			CommonMetadata: CommonMetadata{Annotations: map[string]string{"bad key!": "x"}}}, field: "common_metadata.annotations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name, tc.spec.Namespace = "rel", "apps"
			_, err := Template(context.Background(), &tc.spec, tc.opts)
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Path != tc.field {
				t.Fatalf("error %v, want one on %s", err, tc.field)
			}
		})
	}
}

// Blank lines inside a literal block are data: Helm 4.2 lost them
// (helm-controller 1.6.3 pinned a Helm fork for it, its #1545); v4.3.1 keeps
// them, in the rendered manifest and in the object installed.
func TestTemplate_keepsBlankLinesOfLiteralBlocks(t *testing.T) {
	t.Parallel()
	const script = "line1\n\n\nline4\n"
	path, digest := writeChart(t, "1.0.0", map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: blank\nversion: 1.0.0\n",
		"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: blank\ndata:\n  script: |\n    line1\n\n\n    line4\n\n",
	})
	out, err := Template(context.Background(), &Spec{Name: "r", Namespace: "n", ChartPath: path, ChartDigest: digest}, TemplateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Manifest, "  script: |\n    line1\n\n\n    line4\n") {
		t.Fatalf("manifest lost the blank lines:\n%s", out.Manifest)
	}
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	spec := &Spec{Name: "blank", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	cm, ok := get(t, c, "v1", "ConfigMap", ns, "blank")
	if !ok {
		t.Fatal("no ConfigMap")
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "script"); got != script {
		t.Fatalf("installed script %q, want %q", got, script)
	}
}

// commonChart is a chart whose objects already carry labels and annotations
// of their own, with a selector and a pod template (which common_metadata
// leaves alone), a test hook, and a CRD in crds/ (never post-rendered).
func commonChart(t *testing.T) (string, string) {
	t.Helper()
	return writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: common\nversion: 0.1.0\n",
		"values.yaml": "replicaCount: 1\n",
		"crds/gadgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  labels:
    team: chart
    app: common
  annotations:
    example.com/note: chart
data:
  v: one
`,
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      app: common
  template:
    metadata:
      labels:
        app: common
    spec:
      containers:
      - name: c
        image: busybox
`,
		"templates/tests/test.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
  - name: t
    image: busybox
`,
	})
}

// releaseRendered is what the release of spec renders for an install: its
// own install action (newInstall, which post-renders with newPostRenderer),
// run client-only, printed as Template prints it.
func releaseRendered(t *testing.T, spec *Spec) []TemplatedObject {
	t.Helper()
	s := spec.withDefaults()
	ch, err := loadChart(s.ChartPath)
	if err != nil {
		t.Fatal(err)
	}
	values, _, err := composeValues(context.Background(), nil, s)
	if err != nil {
		t.Fatal(err)
	}
	in := newInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler)), s, ReleaseName(s), releaseNamespace(s), releaseState{kind: stateAbsent})
	in.DryRunStrategy, in.Replace = action.DryRunClient, true
	rel, err := runRelease(in.RunWithContext(context.Background(), ch, values))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	objs, err := templatedObjects(b.String())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// withoutOrigin is o without the origin labels a release adds.
func withoutOrigin(o *unstructured.Unstructured) map[string]any {
	c := o.DeepCopy()
	labels := c.GetLabels()
	delete(labels, OriginNameLabel)
	delete(labels, OriginNamespaceLabel)
	if len(labels) == 0 {
		labels = nil
	}
	c.SetLabels(labels)
	return c.Object
}

// TestTemplateCommonMetadata: common_metadata's labels and annotations are
// on every object the template renders, over the chart's and the
// post-renderers', on metadata only, on hooks unless post_render_strategy is
// nohooks, never on the CRDs of crds/; and every object is the one the
// release's own install renders, but for the release's origin labels.
func TestTemplateCommonMetadata(t *testing.T) {
	path, digest := commonChart(t)
	cm := CommonMetadata{Labels: map[string]string{"team": "platform", "example.com/tier": "web"},
		Annotations: map[string]string{"example.com/note": "common", "example.com/owner": "sre"}}
	patchTeam := []PostRenderer{{Kustomize: &Kustomize{Patches: []KustomizePatch{{
		Patch:  `[{"op": "add", "path": "/metadata/labels/team", "value": "patched"}, {"op": "add", "path": "/metadata/labels/patched", "value": "yes"}]`,
		Target: &KustomizeSelector{Kind: "ConfigMap"},
	}}}}}
	for _, tc := range []struct {
		name          string
		cm            CommonMetadata
		strategy      string
		postRenderers []PostRenderer
		opts          TemplateOptions
		// bare are the kinds that do not get the common metadata.
		bare []string
		// extra are labels some objects keep besides common_metadata's (by
		// kind).
		extra map[string]map[string]string
	}{
		{name: "labels and annotations, hooks too", cm: cm, extra: map[string]map[string]string{"ConfigMap": {"app": "common"}}},
		{name: "labels only", cm: CommonMetadata{Labels: cm.Labels}},
		{name: "annotations only", cm: CommonMetadata{Annotations: cm.Annotations}},
		{name: "nohooks leaves the hooks", cm: cm, strategy: PostRenderNoHooks, bare: []string{"Pod"}},
		{name: "separate gives the hooks", cm: cm, strategy: PostRenderSeparate},
		{name: "over the post-renderers", cm: cm, postRenderers: patchTeam,
			extra: map[string]map[string]string{"ConfigMap": {"app": "common", "patched": "yes"}}},
		{name: "not on crds", cm: cm, opts: TemplateOptions{IncludeCRDs: true}, bare: []string{"CustomResourceDefinition"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: "rel", Namespace: "apps", ChartPath: path, ChartDigest: digest, CommonMetadata: tc.cm,
				PostRenderStrategy: tc.strategy, PostRenderers: tc.postRenderers}
			got, err := Template(context.Background(), spec, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := Template(context.Background(), &Spec{Name: "rel", Namespace: "apps", ChartPath: path, ChartDigest: digest,
				PostRenderStrategy: tc.strategy, PostRenderers: tc.postRenderers}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Objects) != len(plain.Objects) || len(got.Objects) < 3 {
				t.Fatalf("%d objects, %d without common_metadata", len(got.Objects), len(plain.Objects))
			}
			for i, o := range got.Objects {
				kind, before := o.Object.GetKind(), plain.Objects[i].Object
				if slices.Contains(tc.bare, kind) {
					if !reflect.DeepEqual(o.Object.Object, before.Object) {
						t.Errorf("%s got common_metadata:\n%s", kind, o.Manifest)
					}
					continue
				}
				for k, v := range tc.cm.Labels {
					if o.Object.GetLabels()[k] != v {
						t.Errorf("%s: label %s = %q, want %q (labels %v)", kind, k, o.Object.GetLabels()[k], v, o.Object.GetLabels())
					}
				}
				for k, v := range tc.cm.Annotations {
					if o.Object.GetAnnotations()[k] != v {
						t.Errorf("%s: annotation %s = %q, want %q", kind, k, o.Object.GetAnnotations()[k], v)
					}
				}
				// Nothing else changed: the metadata of the object without
				// common_metadata, with common_metadata's keys set over it.
				want := before.DeepCopy()
				want.SetLabels(merged(before.GetLabels(), tc.cm.Labels))
				want.SetAnnotations(merged(before.GetAnnotations(), tc.cm.Annotations))
				if !reflect.DeepEqual(o.Object.Object, want.Object) {
					t.Errorf("%s is not the object without common_metadata plus its keys:\n--- got\n%s\n--- without\n%s", kind, o.Manifest, plain.Objects[i].Manifest)
				}
				for k, v := range tc.extra[kind] {
					if o.Object.GetLabels()[k] != v {
						t.Errorf("%s: label %s = %q, want %q", kind, k, o.Object.GetLabels()[k], v)
					}
				}
				if !strings.Contains(got.Manifest, strings.TrimSpace(o.Manifest)) {
					t.Errorf("%s's document is not in the manifest", kind)
				}
			}
			// The Deployment's selector and pod template keep the chart's
			// labels only.
			for _, o := range got.Objects {
				if o.Object.GetKind() != "Deployment" {
					continue
				}
				for _, f := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
					if m, _, _ := unstructured.NestedStringMap(o.Object.Object, f...); !reflect.DeepEqual(m, map[string]string{"app": "common"}) {
						t.Errorf("%s = %v, want the chart's only", strings.Join(f, "."), m)
					}
				}
			}
			// The release's own install renders the same objects, with its
			// origin labels over them (crds/ are not rendered by it).
			rel := releaseRendered(t, spec)
			var tmpl []TemplatedObject
			for _, o := range got.Objects {
				if o.Object.GetKind() != "CustomResourceDefinition" {
					tmpl = append(tmpl, o)
				}
			}
			if len(rel) != len(tmpl) {
				t.Fatalf("the release renders %d objects, the template %d", len(rel), len(tmpl))
			}
			for i := range rel {
				if rel[i].Object.GetLabels()[OriginNameLabel] != "rel" && !slices.Contains(tc.bare, rel[i].Object.GetKind()) {
					t.Errorf("the release's %s has no origin labels: %v", rel[i].Object.GetKind(), rel[i].Object.GetLabels())
				}
				if w, g := withoutOrigin(rel[i].Object), tmpl[i].Object.Object; !reflect.DeepEqual(w, g) {
					t.Errorf("the release renders %s otherwise:\n--- release\n%s\n--- template\n%s", tmpl[i].Object.GetKind(), rel[i].Manifest, tmpl[i].Manifest)
				}
			}
		})
	}
}

// merged is b's keys set over a's; nil when both are empty.
func merged(a, b map[string]string) map[string]string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// TestTemplateSchemaValidation: values the chart's values.schema.json
// refuses fail the template on `values` with the schema's error, as the
// release's install does; Install.DisableSchemaValidation (the data source's
// disable_schema_validation) renders them, as `helm template
// --skip-schema-validation`.
func TestTemplateSchemaValidation(t *testing.T) {
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
		"values.yaml":        "replicaCount: 1\n",
		"values.schema.json": `{"type": "object", "properties": {"replicaCount": {"type": "integer"}}, "additionalProperties": false}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values.replicaCount | quote }}\n",
	})
	for _, tc := range []struct {
		name    string
		values  map[string]any
		skip    bool
		want    string // in the manifest
		wantErr []string
	}{
		{name: "valid values", values: map[string]any{"replicaCount": 2}, want: `replicas: "2"`},
		{name: "refused", values: map[string]any{"replicaCount": "three"},
			wantErr: []string{"values don't meet the specifications of the schema", "replicaCount"}},
		{name: "unknown key refused", values: map[string]any{"replicas": 2},
			wantErr: []string{"values don't meet the specifications of the schema", "replicas"}},
		{name: "refused, skipped", values: map[string]any{"replicaCount": "three"}, skip: true, want: `replicas: "three"`},
		{name: "unknown key, skipped", values: map[string]any{"replicas": 2}, skip: true, want: `replicas: "1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: "rel", Namespace: "apps", ChartPath: path, ChartDigest: digest, Values: tc.values,
				Install: Install{DisableSchemaValidation: tc.skip}}
			got, err := Template(context.Background(), spec, TemplateOptions{})
			if tc.wantErr != nil {
				var fe *fielderr.Error
				if !errors.As(err, &fe) || fe.Path != "values" {
					t.Fatalf("error %v, want one on values", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Manifest, tc.want) {
				t.Errorf("manifest lacks %q:\n%s", tc.want, got.Manifest)
			}
			// As the release's install action: the same switch, the same render.
			in := newInstall(action.NewConfiguration(), spec.withDefaults(), "rel", "apps", releaseState{kind: stateAbsent})
			if in.SkipSchemaValidation != tc.skip {
				t.Errorf("the release's install skips the schema: %v, the template: %v", in.SkipSchemaValidation, tc.skip)
			}
		})
	}
}
