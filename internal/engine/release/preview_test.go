package release

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// previewChart has a ConfigMap that is always there, one that the values can
// drop, and a Secret, so that a preview shows an update, a delete and masked
// data.
func previewChart(t *testing.T) (string, string) {
	return writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: preview\nversion: 0.1.0\n",
		"values.yaml":        "greeting: hello\nextra: true\npassword: one\n",
		"values.schema.json": `{"type": "object", "properties": {"greeting": {"type": "string", "maxLength": 20}}}`,
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
`,
		"templates/extra.yaml": `{{ if .Values.extra }}apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  k: v
{{ end }}`,
		"templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}
stringData:
  password: {{ .Values.password | quote }}
`,
		"templates/fail.yaml": `{{ if .Values.fail }}{{ fail "fail was set" }}{{ end }}`,
	})
}

func changesOf(p *Plan) map[string]kube.Drift {
	out := map[string]kube.Drift{}
	if p.Preview != nil {
		for _, d := range p.Preview.Changes {
			out[d.ID] = d
		}
	}
	return out
}

// The plan of an install lists the objects it creates; the plan of an upgrade
// lists, per object, the fields Helm's patch changes (Secret data masked) and
// the objects it deletes; neither changes anything in the cluster.
func TestPlan_previewsInstallAndUpgrade(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := previewChart(t)
	spec := &Spec{Name: "pv", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest}

	p, err := e.Plan(ctx, spec, nil)
	if err != nil || p.Action != ActionInstall || p.Preview == nil || p.Preview.Unknown != "" {
		t.Fatalf("plan of the install = %+v, %v", p, err)
	}
	got := changesOf(p)
	for _, id := range []string{ns + "_pv__ConfigMap", ns + "_pv-extra__ConfigMap", ns + "_pv__Secret"} {
		if got[id].Type != "create" {
			t.Errorf("install preview: %s = %+v, want create (all: %+v)", id, got[id], p.Preview.Changes)
		}
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "pv"); ok {
		t.Fatal("the plan created the ConfigMap")
	}
	if _, err := e.Observe(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Observe(ctx, spec, nil); st != nil {
		t.Fatal("the plan wrote a release to storage")
	}

	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Values = map[string]any{"greeting": "bonjour", "extra": false, "password": "two"}
	p, err = e.Plan(ctx, spec, st)
	if err != nil || p.Action != ActionUpgrade || p.Preview == nil {
		t.Fatalf("plan of the upgrade = %+v, %v", p, err)
	}
	got = changesOf(p)
	cm := got[ns+"_pv__ConfigMap"]
	if cm.Type != "update" || len(cm.Changes) != 1 || cm.Changes[0].Path != "/data/greeting" ||
		cm.Changes[0].From != `"hello"` || cm.Changes[0].To != `"bonjour"` {
		t.Errorf("ConfigMap change = %+v", cm)
	}
	if got[ns+"_pv-extra__ConfigMap"].Type != "delete" {
		t.Errorf("dropped ConfigMap = %+v, want delete", got[ns+"_pv-extra__ConfigMap"])
	}
	sec := got[ns+"_pv__Secret"]
	if sec.Type != "update" || len(sec.Changes) != 1 || sec.Changes[0].Path != "/data/password" {
		t.Fatalf("Secret change = %+v", sec)
	}
	if strings.Contains(sec.Changes[0].From+sec.Changes[0].To, "dHdv") || strings.Contains(sec.Changes[0].From+sec.Changes[0].To, "b25l") {
		t.Errorf("Secret data not masked: %+v", sec.Changes[0])
	}
	if len(got) != 3 {
		t.Errorf("preview lists %d objects, want 3: %+v", len(got), p.Preview.Changes)
	}
	live, _ := get(t, c, "v1", "ConfigMap", ns, "pv")
	if v, _, _ := unstructured.NestedString(live.Object, "data", "greeting"); v != "hello" {
		t.Errorf("the plan changed the ConfigMap: greeting = %q", v)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "pv-extra"); !ok {
		t.Error("the plan deleted pv-extra")
	}
	if now, err := e.Observe(ctx, spec, st); err != nil || now.Version != 1 {
		t.Fatalf("the plan wrote a release: %+v, %v", now, err)
	}

	// And apply does what the plan said.
	if _, err := e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	live, _ = get(t, c, "v1", "ConfigMap", ns, "pv")
	if v, _, _ := unstructured.NestedString(live.Object, "data", "greeting"); v != "bonjour" {
		t.Errorf("after apply: greeting = %q", v)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "pv-extra"); ok {
		t.Error("after apply: pv-extra is still there")
	}
}

// What apply would reject is rejected at plan: values against the chart's
// schema, a template's fail, an object the API server refuses.
func TestPlan_previewRejects(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := previewChart(t)
	invalidPath, invalidDigest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: invalid\nversion: 0.1.0\n",
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: invalid
spec:
  replicas: -3
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: x}]}
`,
	})
	for _, tc := range []struct {
		name   string
		spec   *Spec
		expect string
	}{
		{"schema", &Spec{Name: "schema", Namespace: ns, ChartPath: path, ChartDigest: digest,
			Values: map[string]any{"greeting": strings.Repeat("x", 30)}}, "greeting"},
		{"fail", &Spec{Name: "fail", Namespace: ns, ChartPath: path, ChartDigest: digest,
			Values: map[string]any{"fail": true}}, "fail was set"},
		{"invalid", &Spec{Name: "invalid", Namespace: ns, ChartPath: invalidPath, ChartDigest: invalidDigest},
			"spec.replicas"},
		{"post-renderer", &Spec{Name: "postrender", Namespace: ns, ChartPath: path, ChartDigest: digest,
			PostRenderers: []PostRenderer{{Kustomize: &Kustomize{Patches: []KustomizePatch{{Patch: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-in-the-chart
data: {a: b}
`}}}}}}, "post_renderers[0].kustomize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Plan(ctx, tc.spec, nil)
			var pe *PreviewError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.expect) {
				t.Fatalf("plan error = %v, want a PreviewError with %q", err, tc.expect)
			}
		})
	}
	if _, ok := get(t, c, "apps/v1", "Deployment", ns, "invalid"); ok {
		t.Error("the plan created the Deployment")
	}
}

// What another resource may create first is not an error at plan: a missing
// namespace, a kind not served yet. The plan leaves the changes unknown and
// warns.
func TestPlan_previewUnknownWhenNamespaceOrKindIsMissing(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := previewChart(t)
	p, err := e.Plan(ctx, &Spec{Name: "pv", Namespace: ns, TargetNamespace: ns + "-later", ChartPath: path, ChartDigest: digest}, nil)
	if err != nil || p.Preview == nil || len(p.Preview.Changes) != 0 || !strings.Contains(p.Preview.Unknown, ns+"-later") ||
		len(p.Preview.Warnings) != 1 || !strings.Contains(p.Preview.Warnings[0], "create_namespace") {
		t.Fatalf("missing namespace: %+v, %v", p.Preview, err)
	}
	spec := &Spec{Name: "pv2", Namespace: ns, TargetNamespace: ns + "-later", ChartPath: path, ChartDigest: digest}
	spec.Install.CreateNamespace = true
	if p, err := e.Plan(ctx, spec, nil); err != nil || p.Preview == nil || p.Preview.Unknown == "" || len(p.Preview.Warnings) != 0 {
		t.Fatalf("missing namespace with create_namespace: %+v, %v", p.Preview, err)
	}

	crPath, crDigest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: cr\nversion: 0.1.0\n",
		"templates/cr.yaml": "apiVersion: example.stevedore.dev/v1\nkind: Widget\nmetadata:\n  name: w\nspec: {}\n",
	})
	p, err = e.Plan(ctx, &Spec{Name: "cr", Namespace: ns, ChartPath: crPath, ChartDigest: crDigest}, nil)
	if err != nil || p.Preview == nil || p.Preview.Unknown == "" || len(p.Preview.Warnings) != 1 ||
		!strings.Contains(p.Preview.Warnings[0], "CustomResourceDefinition") {
		t.Fatalf("unknown kind: %+v, %v", p.Preview, err)
	}
}

// The plan of an install whose objects exist already, owned by a release of
// the same name in another storage namespace (what a replacement that moves
// the release's storage plans: apply uninstalls that release first), leaves
// the changes unknown: they are neither "update" (apply finds them gone) nor
// surely "create".
func TestPlan_previewUnknownWhenObjectsOfAnotherStorageExist(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := previewChart(t)
	old := &Spec{Name: "pv", Namespace: ns, ChartPath: path, ChartDigest: digest, Timeout: time.Minute, MaxHistory: ptr(5)}
	if _, err := e.Reconcile(ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	moved := *old
	moved.StorageNamespace = "default"
	p, err := e.Plan(ctx, &moved, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Action != ActionInstall || p.Preview == nil || len(p.Preview.Changes) != 0 ||
		!strings.Contains(p.Preview.Unknown, "no release in storage namespace default") {
		t.Fatalf("install over the objects of a release stored elsewhere: %+v, %+v", p, p.Preview)
	}
	if _, err := e.Uninstall(ctx, old); err != nil {
		t.Fatal(err)
	}
	if p, err := e.Plan(ctx, &moved, nil); err != nil || p.Preview == nil || p.Preview.Unknown != "" || len(p.Preview.Changes) != 3 {
		t.Fatalf("install once the objects are gone: %+v, %v", p.Preview, err)
	}
}

// A new release_name replaces the resource: the create half is planned while
// the old release's objects are still there, owned by it. That is no
// rejection (the replacement uninstalls the old release first): the changes
// are unknown. Another resource's release over the same objects is refused.
func TestPlan_previewOfAReleaseRenamedByReplacement(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := writeChart(t, "0.1.0", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: fixed\nversion: 0.1.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixed-name\ndata:\n  k: v\n",
	})
	spec := &Spec{Name: "app", Namespace: ns, ReleaseName: "old", ChartPath: path, ChartDigest: digest, Timeout: time.Minute}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatal(err)
	}
	renamed := *spec
	renamed.ReleaseName = "new"
	p, err := e.Plan(ctx, &renamed, nil)
	if err != nil || p.Preview == nil || !strings.Contains(p.Preview.Unknown, "another release of this resource") {
		t.Fatalf("renamed by replacement: %+v, %v", p, err)
	}
	other := &Spec{Name: "other", Namespace: ns, ReleaseName: "other", ChartPath: path, ChartDigest: digest, Timeout: time.Minute}
	_, err = e.Plan(ctx, other, nil)
	var pe *PreviewError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "invalid ownership metadata") {
		t.Fatalf("another resource's release over the objects: %v, want a PreviewError", err)
	}
}
