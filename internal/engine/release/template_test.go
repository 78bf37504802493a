package release

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
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
