package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// renderedManifest is what Helm hands a post-renderer: documents with Source
// comments, in Helm's install order, with a cluster-scoped object among them.
const renderedManifest = `---
# Source: podinfo/templates/clusterrole.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: podinfo-reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
---
# Source: podinfo/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo
  labels:
    app.kubernetes.io/name: podinfo
data:
  greeting: "hello"
  count: "1"
---
# Source: podinfo/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: podinfo
spec:
  selector:
    app.kubernetes.io/name: podinfo
  ports:
  - name: http
    port: 9898
---
# Source: podinfo/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
  labels:
    app.kubernetes.io/name: podinfo
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: podinfo
  template:
    metadata:
      labels:
        app.kubernetes.io/name: podinfo
    spec:
      containers:
      - name: podinfo
        image: ghcr.io/stefanprodan/podinfo:6.0.0
      - name: sidecar
        image: docker.io/library/busybox:1.36
`

func postRender(t *testing.T, spec *Spec, manifest string) []*unstructured.Unstructured {
	t.Helper()
	out, err := newPostRenderer(spec).Run(bytes.NewBufferString(manifest))
	if err != nil {
		t.Fatalf("post-render: %v", err)
	}
	objs, err := kube.ReadObjects(out.String())
	if err != nil {
		t.Fatalf("read post-rendered manifest: %v\n%s", err, out)
	}
	return objs
}

func prSpec(prs ...PostRenderer) *Spec {
	return &Spec{Name: "podinfo", Namespace: "apps", PostRenderers: prs}
}

func kustomizePR(k Kustomize) PostRenderer { return PostRenderer{Kustomize: &k} }

func findRendered(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("%s %s not in the post-rendered manifest", kind, name)
	return nil
}

func renderedString(t *testing.T, o *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedFieldNoCopy(o.Object, fields...)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := v.(string)
	return s
}

func kindsOf(objs []*unstructured.Unstructured) string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.GetKind())
	}
	return strings.Join(ks, ",")
}

func TestPostRender_originLabelsWithoutPostRenderers(t *testing.T) {
	objs := postRender(t, prSpec(), renderedManifest)

	if got, want := kindsOf(objs), "ClusterRole,ConfigMap,Service,Deployment"; got != want {
		t.Errorf("order: got %s, want %s", got, want)
	}
	for _, o := range objs {
		l := o.GetLabels()
		if l[OriginNameLabel] != "podinfo" || l[OriginNamespaceLabel] != "apps" {
			t.Errorf("%s: labels %v lack the origin labels", kube.Describe(o), l)
		}
	}
	d := findRendered(t, objs, "Deployment", "podinfo")
	if d.GetLabels()["app.kubernetes.io/name"] != "podinfo" {
		t.Errorf("chart label lost: %v", d.GetLabels())
	}
	// Selectors are immutable and pod templates would roll the pods: only
	// metadata.labels carry the origin.
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	tmpl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	svcSel, _, _ := unstructured.NestedStringMap(findRendered(t, objs, "Service", "podinfo").Object, "spec", "selector")
	for what, m := range map[string]map[string]string{"selector": sel, "template": tmpl, "service selector": svcSel} {
		if len(m) != 1 {
			t.Errorf("%s changed: %v", what, m)
		}
	}
	if got := renderedString(t, findRendered(t, objs, "ConfigMap", "podinfo"), "data", "count"); got != "1" {
		t.Errorf("quoted string value changed type: %q", got)
	}
}

func TestPostRender_strategicMergePatchWithTarget(t *testing.T) {
	spec := prSpec(kustomizePR(Kustomize{Patches: []KustomizePatch{{
		Patch: `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ignored-with-a-target
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: podinfo
        resources:
          limits: {memory: 64Mi}
`,
		Target: &KustomizeSelector{Kind: "Deployment", LabelSelector: "app.kubernetes.io/name=podinfo"},
	}}}))
	objs := postRender(t, spec, renderedManifest)

	d := findRendered(t, objs, "Deployment", "podinfo")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 3 {
		t.Errorf("replicas = %d, want 3", r)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) != 2 {
		t.Fatalf("strategic merge must merge containers by name, got %d", len(containers))
	}
	c := &unstructured.Unstructured{Object: containers[0].(map[string]any)}
	if got := renderedString(t, c, "resources", "limits", "memory"); got != "64Mi" {
		t.Errorf("limits.memory = %q", got)
	}
	if got := renderedString(t, c, "image"); got != "ghcr.io/stefanprodan/podinfo:6.0.0" {
		t.Errorf("image = %q, merge lost it", got)
	}
	if got, want := kindsOf(objs), "ClusterRole,ConfigMap,Service,Deployment"; got != want {
		t.Errorf("order: got %s, want %s", got, want)
	}
}

func TestPostRender_strategicMergePatchByName(t *testing.T) {
	spec := prSpec(kustomizePR(Kustomize{Patches: []KustomizePatch{{Patch: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo
data:
  greeting: hi
`}}}))
	objs := postRender(t, spec, renderedManifest)
	if got := renderedString(t, findRendered(t, objs, "ConfigMap", "podinfo"), "data", "greeting"); got != "hi" {
		t.Errorf("greeting = %q, want hi", got)
	}
}

func TestPostRender_json6902Patch(t *testing.T) {
	for name, patch := range map[string]string{
		"json": `[{"op": "add", "path": "/metadata/annotations", "value": {"example.com/patched": "yes"}},
		          {"op": "replace", "path": "/data/greeting", "value": "hola"}]`,
		"yaml": `
- op: add
  path: /metadata/annotations
  value: {example.com/patched: "yes"}
- op: replace
  path: /data/greeting
  value: hola
`,
	} {
		t.Run(name, func(t *testing.T) {
			spec := prSpec(kustomizePR(Kustomize{Patches: []KustomizePatch{{
				Patch:  patch,
				Target: &KustomizeSelector{Version: "v1", Kind: "ConfigMap", Name: "podinfo"},
			}}}))
			objs := postRender(t, spec, renderedManifest)
			cm := findRendered(t, objs, "ConfigMap", "podinfo")
			if got := renderedString(t, cm, "data", "greeting"); got != "hola" {
				t.Errorf("greeting = %q, want hola", got)
			}
			if got := cm.GetAnnotations()["example.com/patched"]; got != "yes" {
				t.Errorf("annotation = %q, want yes", got)
			}
			if findRendered(t, objs, "Service", "podinfo").GetAnnotations() != nil {
				t.Error("the patch reached an object its target does not select")
			}
		})
	}
}

func TestPostRender_imagesReplaced(t *testing.T) {
	spec := prSpec(kustomizePR(Kustomize{Images: []KustomizeImage{
		{Name: "ghcr.io/stefanprodan/podinfo", NewName: "registry.example.com/podinfo", NewTag: "6.1.0"},
		{Name: "docker.io/library/busybox", Digest: "sha256:" + strings.Repeat("ab", 32)},
	}}))
	objs := postRender(t, spec, renderedManifest)
	containers, _, _ := unstructured.NestedSlice(findRendered(t, objs, "Deployment", "podinfo").Object, "spec", "template", "spec", "containers")
	var images []string
	for _, c := range containers {
		images = append(images, c.(map[string]any)["image"].(string))
	}
	want := []string{"registry.example.com/podinfo:6.1.0", "docker.io/library/busybox@sha256:" + strings.Repeat("ab", 32)}
	if strings.Join(images, " ") != strings.Join(want, " ") {
		t.Errorf("images = %v, want %v", images, want)
	}
}

func TestPostRender_postRenderersRunInOrder(t *testing.T) {
	// The second post-renderer's test operation only passes on the first
	// one's output: run the other way round, the patch fails.
	first := kustomizePR(Kustomize{Patches: []KustomizePatch{{
		Patch:  `[{"op": "add", "path": "/metadata/labels/stage", "value": "one"}]`,
		Target: &KustomizeSelector{Kind: "ConfigMap"},
	}}})
	second := kustomizePR(Kustomize{Patches: []KustomizePatch{{
		Patch: `[{"op": "test", "path": "/metadata/labels/stage", "value": "one"},
		         {"op": "replace", "path": "/metadata/labels/stage", "value": "two"}]`,
		Target: &KustomizeSelector{Kind: "ConfigMap"},
	}}})
	objs := postRender(t, prSpec(first, PostRenderer{}, second), renderedManifest)
	cm := findRendered(t, objs, "ConfigMap", "podinfo")
	if got := cm.GetLabels()["stage"]; got != "two" {
		t.Errorf("stage = %q, want two", got)
	}
	if cm.GetLabels()[OriginNameLabel] != "podinfo" {
		t.Errorf("origin labels must come after the post-renderers: %v", cm.GetLabels())
	}

	_, err := newPostRenderer(prSpec(second, first)).Run(bytes.NewBufferString(renderedManifest))
	if err == nil || !strings.Contains(err.Error(), "post_renderers[0].kustomize") {
		t.Errorf("reversed order: error %v, want a failure of post_renderers[0]", err)
	}
}

func TestPostRender_originLabelsOverrideChartValues(t *testing.T) {
	// A chart (or a patch) cannot forge the origin: it is applied last.
	spec := prSpec(kustomizePR(Kustomize{Patches: []KustomizePatch{{
		Patch:  `[{"op": "add", "path": "/metadata/labels/stevedore.dev~1name", "value": "forged"}]`,
		Target: &KustomizeSelector{Kind: "ConfigMap"},
	}}}))
	cm := findRendered(t, postRender(t, spec, renderedManifest), "ConfigMap", "podinfo")
	if got := cm.GetLabels()[OriginNameLabel]; got != "podinfo" {
		t.Errorf("%s = %q, want podinfo", OriginNameLabel, got)
	}
}

func TestPostRender_emptyManifestGivesNoObjects(t *testing.T) {
	spec := prSpec(kustomizePR(Kustomize{Images: []KustomizeImage{{Name: "x", NewTag: "1"}}}))
	for _, m := range []string{"", "---\n# Source: hooks-only/templates/NOTES.txt\n", "\n---\n---\n"} {
		out, err := newPostRenderer(spec).Run(bytes.NewBufferString(m))
		if err != nil {
			t.Errorf("%q: %v", m, err)
			continue
		}
		if objs, _ := kube.ReadObjects(out.String()); len(objs) != 0 {
			t.Errorf("%q: got objects %v", m, objs)
		}
	}
}

func TestPostRender_errorNamesThePostRenderer(t *testing.T) {
	spec := prSpec(kustomizePR(Kustomize{}), kustomizePR(Kustomize{Patches: []KustomizePatch{{Patch: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-in-the-chart
data: {a: b}
`}}}))
	_, err := newPostRenderer(spec).Run(bytes.NewBufferString(renderedManifest))
	if err == nil || !strings.HasPrefix(err.Error(), "post_renderers[1].kustomize: ") {
		t.Fatalf("error %v, want one naming post_renderers[1]", err)
	}
}

func TestValidatePostRenderers_errorNamesTheField(t *testing.T) {
	valid := []PostRenderer{
		{},
		kustomizePR(Kustomize{
			Patches: []KustomizePatch{
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: podinfo}\nspec: {replicas: 2}"},
				{Patch: "kind: Deployment\nmetadata: {name: any}\nspec: {replicas: 2}", Target: &KustomizeSelector{Kind: "Deployment", Name: "pod.*"}},
				{Patch: `[{"op": "remove", "path": "/spec/replicas"}]`, Target: &KustomizeSelector{Kind: "Deployment"}},
				{Patch: "- op: move\n  from: /a\n  path: /b", Target: &KustomizeSelector{LabelSelector: "app in (a, b)"}},
			},
			Images: []KustomizeImage{{Name: "nginx", NewTag: "1.27"}},
		}),
	}
	if err := ValidatePostRenderers(valid); err != nil {
		t.Fatalf("valid post-renderers: %v", err)
	}

	tests := []struct {
		name  string
		k     Kustomize
		field string
		msg   string
	}{
		{"empty patch", Kustomize{Patches: []KustomizePatch{{Patch: "  \n"}}},
			"post_renderers[1].kustomize.patches[0].patch", "must not be empty"},
		{"not YAML", Kustomize{Patches: []KustomizePatch{{Patch: "kind: A\nmetadata: {name: a}"}, {Patch: "kind: [unclosed"}}},
			"post_renderers[1].kustomize.patches[1].patch", "not YAML or JSON"},
		{"scalar", Kustomize{Patches: []KustomizePatch{{Patch: "replicas"}}},
			"post_renderers[1].kustomize.patches[0].patch", "nor a JSON 6902 patch"},
		{"JSON 6902 without target", Kustomize{Patches: []KustomizePatch{{Patch: `[{"op": "remove", "path": "/spec"}]`}}},
			"post_renderers[1].kustomize.patches[0].target", "needs a target"},
		{"unknown op", Kustomize{Patches: []KustomizePatch{{Patch: `[{"op": "delete", "path": "/spec"}]`, Target: &KustomizeSelector{Kind: "X"}}}},
			"post_renderers[1].kustomize.patches[0].patch", `unknown op "delete"`},
		{"bad pointer", Kustomize{Patches: []KustomizePatch{{Patch: `[{"op": "remove", "path": "spec"}]`, Target: &KustomizeSelector{Kind: "X"}}}},
			"post_renderers[1].kustomize.patches[0].patch", `path "spec"`},
		{"add without value", Kustomize{Patches: []KustomizePatch{{Patch: `[{"op": "add", "path": "/spec/x"}]`, Target: &KustomizeSelector{Kind: "X"}}}},
			"post_renderers[1].kustomize.patches[0].patch", "missing value"},
		{"strategic merge without identity", Kustomize{Patches: []KustomizePatch{{Patch: "spec: {replicas: 2}"}}},
			"post_renderers[1].kustomize.patches[0].patch", "needs kind and metadata.name"},
		{"strategic merge without identity, with target", Kustomize{Patches: []KustomizePatch{{Patch: "kind: Deployment\nspec: {replicas: 2}", Target: &KustomizeSelector{Kind: "Deployment"}}}},
			"post_renderers[1].kustomize.patches[0].patch", "needs kind and metadata.name"},
		{"several strategic merge documents with target", Kustomize{Patches: []KustomizePatch{{Patch: "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b}\n", Target: &KustomizeSelector{Kind: "A"}}}},
			"post_renderers[1].kustomize.patches[0].patch", "must be one document, not 2"},
		{"JSON 6902 operation not an object", Kustomize{Patches: []KustomizePatch{{Patch: `["remove"]`, Target: &KustomizeSelector{Kind: "X"}}}},
			"post_renderers[1].kustomize.patches[0].patch", "operation 0: not an object"},
		{"bad label selector", Kustomize{Patches: []KustomizePatch{{Patch: "kind: A\nmetadata: {name: a}", Target: &KustomizeSelector{LabelSelector: "a in (b"}}}},
			"post_renderers[1].kustomize.patches[0].target.label_selector", ""},
		{"bad name regexp", Kustomize{Patches: []KustomizePatch{{Patch: "kind: A\nmetadata: {name: a}", Target: &KustomizeSelector{Name: "pod(info"}}}},
			"post_renderers[1].kustomize.patches[0].target.name", ""},
		{"unnamed image", Kustomize{Images: []KustomizeImage{{Name: "a", NewTag: "1"}, {NewTag: "2"}}},
			"post_renderers[1].kustomize.images[1].name", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Index 1, behind a valid entry, so that the index is checked.
			err := ValidatePostRenderers([]PostRenderer{valid[1], kustomizePR(tt.k)})
			var fe *fielderr.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v, want a *fielderr.Error", err)
			}
			if fe.Path != tt.field {
				t.Errorf("field = %q, want %q (error: %v)", fe.Path, tt.field, err)
			}
			if !strings.Contains(fe.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", fe.Error(), tt.msg)
			}
		})
	}
}

func TestValidatePostRenderers_reportsEveryProblem(t *testing.T) {
	err := ValidatePostRenderers([]PostRenderer{
		kustomizePR(Kustomize{Images: []KustomizeImage{{}}}),
		kustomizePR(Kustomize{Patches: []KustomizePatch{{Patch: `[{"op": "remove", "path": "/x"}]`}}}),
	})
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %v does not unwrap into a list", err)
	}
	var fields []string
	for _, e := range joined.Unwrap() {
		fields = append(fields, e.(*fielderr.Error).Path)
	}
	want := "post_renderers[0].kustomize.images[0].name post_renderers[1].kustomize.patches[0].target"
	if strings.Join(fields, " ") != want {
		t.Errorf("fields = %v, want %s", fields, want)
	}
}

// TestValidatePostRenderers_acceptedPatchesRender checks that what validation
// accepts kustomize also applies, on a manifest that has the patched objects.
func TestValidatePostRenderers_acceptedPatchesRender(t *testing.T) {
	prs := []PostRenderer{kustomizePR(Kustomize{Patches: []KustomizePatch{
		{Patch: "kind: Deployment\nmetadata: {name: any}\nspec: {replicas: 2}", Target: &KustomizeSelector{Kind: "Deployment"}},
		{Patch: `[{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]`, Target: &KustomizeSelector{Kind: "Service"}},
	}})}
	if err := ValidatePostRenderers(prs); err != nil {
		t.Fatal(err)
	}
	objs := postRender(t, prSpec(prs...), renderedManifest)
	if r, _, _ := unstructured.NestedInt64(findRendered(t, objs, "Deployment", "podinfo").Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d, want 2", r)
	}
}

func TestPostRenderersDigest_pinnedAndOrderSensitive(t *testing.T) {
	sum := sha256.Sum256([]byte("[]\n"))
	empty := "sha256:" + hex.EncodeToString(sum[:])
	if got := postRenderersDigest(nil); got != empty {
		t.Errorf("nil: %s, want %s", got, empty)
	}
	if got := postRenderersDigest([]PostRenderer{}); got != empty {
		t.Errorf("empty: %s, want %s", got, empty)
	}

	mk := func(replicas string) []PostRenderer {
		return []PostRenderer{kustomizePR(Kustomize{
			Patches: []KustomizePatch{{Patch: "spec: {replicas: " + replicas + "}", Target: &KustomizeSelector{Kind: "Deployment"}}},
			Images:  []KustomizeImage{{Name: "nginx", NewTag: "1.27"}},
		})}
	}
	a, b := postRenderersDigest(mk("2")), postRenderersDigest(mk("2"))
	if a != b {
		t.Errorf("identical specs, different digests: %s %s", a, b)
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+64 {
		t.Errorf("digest %q is not sha256:<hex>", a)
	}
	if c := postRenderersDigest(mk("3")); c == a {
		t.Error("a changed patch did not change the digest")
	}
	// The JSON is helm-controller's spec.postRenderers: pinned, so that a
	// refactoring of the Go types cannot change every release's digest.
	const want = `[{"kustomize":{"patches":[{"patch":"spec: {replicas: 2}","target":{"kind":"Deployment"}}],"images":[{"name":"nginx","newTag":"1.27"}]}}]` + "\n"
	sum = sha256.Sum256([]byte(want))
	if a != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s is not that of %s", a, want)
	}

	swapped := []PostRenderer{mk("2")[0], kustomizePR(Kustomize{Images: []KustomizeImage{{Name: "x"}}})}
	if postRenderersDigest(swapped) == postRenderersDigest([]PostRenderer{swapped[1], swapped[0]}) {
		t.Error("the order of post-renderers matters and must change the digest")
	}
	if postRenderersDigest([]PostRenderer{{}}) == empty {
		t.Error("an empty post-renderer entry is not an empty list")
	}
}
