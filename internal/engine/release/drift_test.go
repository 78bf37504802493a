package release

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// driftEnv is one namespace of the test cluster with a podinfo release
// installed by the Helm SDK directly, as the release engine would have.
type driftEnv struct {
	f    *kube.Factory
	c    client.Client
	dyn  dynamic.Interface
	helm *action.Configuration
	ns   string
	spec *Spec
	rel  *helmrelease.Release
}

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// installPodinfo installs the podinfo chart as release "podinfo" into a new
// namespace, post-rendered with spec's post-renderers (spec.Name and
// Namespace are filled in).
func installPodinfo(t *testing.T, spec *Spec) *driftEnv {
	t.Helper()
	kubeconfig := testenv.Need(t).Cluster.Kubeconfig
	ctx := testenv.Context(t)
	e := &driftEnv{f: kube.NewFactory(kube.Config{ConfigPaths: []string{kubeconfig}}, ""), spec: spec}
	var err error
	if e.c, err = e.f.Client(); err != nil {
		t.Fatal(err)
	}
	if e.dyn, err = e.f.Dynamic(); err != nil {
		t.Fatal(err)
	}
	e.ns = testenv.Namespace(t, e.c, "")
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}})
	})
	spec.Name, spec.Namespace = "podinfo", e.ns

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &e.ns
	e.helm = new(action.Configuration)
	if err := e.helm.Init(flags, e.ns, "secret"); err != nil {
		t.Fatal(err)
	}
	archive, err := testenv.PackageChart(filepath.Join(testenv.ChartsDir(), "podinfo"), "1.0.0", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(archive)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(e.helm)
	install.ReleaseName, install.Namespace = "podinfo", e.ns
	install.Timeout = time.Minute
	install.PostRenderer = newPostRenderer(spec)
	install.WaitStrategy = helmkube.HookOnlyStrategy
	if e.rel, err = runRelease(install.RunWithContext(ctx, ch, map[string]any{"replicaCount": 2})); err != nil {
		t.Fatalf("helm install: %v", err)
	}
	e.waitObserved(t)
	return e
}

// waitObserved waits for the deployment controller's first write (the
// revision annotation): a write between drift detection's read and its
// dry-run would show up as a change.
func (e *driftEnv) waitObserved(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if e.get(t, deploymentsGVR, "podinfo").GetAnnotations()["deployment.kubernetes.io/revision"] != "" {
			return
		}
	}
	t.Fatal("the deployment controller did not observe the Deployment in 30s")
}

// correct detects the drift and corrects what it reports, as an apply does.
func (e *driftEnv) correct(t *testing.T) error {
	t.Helper()
	return correctDrift(testenv.Context(t), e.f, e.spec, e.rel, e.detect(t))
}

func (e *driftEnv) detect(t *testing.T) []kube.Drift {
	t.Helper()
	d, _, err := detectDrift(testenv.Context(t), e.f, e.spec, e.rel, nil, false)
	if err != nil {
		t.Fatalf("detect drift: %v", err)
	}
	return d
}

// patch changes an object as another field manager would (kubectl, an
// operator), through subresource when given.
func (e *driftEnv) patch(t *testing.T, gvr schema.GroupVersionResource, name string, pt types.PatchType, data string, subresource ...string) {
	t.Helper()
	_, err := e.dyn.Resource(gvr).Namespace(e.ns).Patch(testenv.Context(t), name, pt, []byte(data),
		metav1.PatchOptions{FieldManager: "someone-else"}, subresource...)
	if err != nil {
		t.Fatalf("patch %s %s: %v", gvr.Resource, name, err)
	}
}

func (e *driftEnv) scale(t *testing.T, replicas int) {
	e.patch(t, deploymentsGVR, "podinfo", types.MergePatchType, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas), "scale")
}

func (e *driftEnv) editConfigMap(t *testing.T) {
	e.patch(t, configMapsGVR, "podinfo", types.MergePatchType, `{"data":{"greeting":"edited"}}`)
}

func (e *driftEnv) deleteService(t *testing.T) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "podinfo"}}
	if err := e.c.Delete(testenv.Context(t), svc); err != nil {
		t.Fatal(err)
	}
}

func (e *driftEnv) get(t *testing.T, gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := e.dyn.Resource(gvr).Namespace(e.ns).Get(testenv.Context(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (e *driftEnv) id(group, kind string) string {
	return fmt.Sprintf("%s_podinfo_%s_%s", e.ns, group, kind)
}

func driftByID(drift []kube.Drift) map[string]kube.Drift {
	m := make(map[string]kube.Drift, len(drift))
	for _, d := range drift {
		m[d.ID] = d
	}
	return m
}

func expectNoDrift(t *testing.T, drift []kube.Drift) {
	t.Helper()
	if len(drift) != 0 {
		t.Errorf("drift = %+v, want none", drift)
	}
}

// expectChange checks that d is an update whose only change is path, from the
// live value from to the release's value to.
func expectChange(t *testing.T, d kube.Drift, path, from, to string) {
	t.Helper()
	if d.Type != "update" || len(d.Changes) != 1 {
		t.Fatalf("%s: drift %+v, want one change of %s", d.ID, d, path)
	}
	c := d.Changes[0]
	if c.Op != "replace" || c.Path != path || c.From != from || c.To != to {
		t.Errorf("%s: change %+v, want replace %s from %s to %s", d.ID, c, path, from, to)
	}
}

func TestDetectDrift_noneAfterInstall(t *testing.T) {
	t.Parallel()
	// Post-rendered: origin labels on everything, an annotation patched in
	// and an image replaced. What Helm stored is what it applied, so none of
	// it is drift.
	e := installPodinfo(t, &Spec{PostRenderers: []PostRenderer{kustomizePR(Kustomize{
		Patches: []KustomizePatch{{
			Patch:  `[{"op": "add", "path": "/metadata/annotations", "value": {"example.com/patched": "yes"}}]`,
			Target: &KustomizeSelector{Kind: "Deployment"},
		}},
		Images: []KustomizeImage{{Name: "ghcr.io/stefanprodan/podinfo", NewTag: "6.1.0"}},
	})}})
	expectNoDrift(t, e.detect(t))

	d := e.get(t, deploymentsGVR, "podinfo")
	if d.GetLabels()[OriginNameLabel] != "podinfo" || d.GetLabels()[OriginNamespaceLabel] != e.ns {
		t.Errorf("live Deployment lacks the origin labels: %v", d.GetLabels())
	}
	if d.GetAnnotations()["example.com/patched"] != "yes" {
		t.Errorf("live Deployment lacks the patched annotation: %v", d.GetAnnotations())
	}
}

func TestDetectDrift_changedAndMissingObjects(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	e.scale(t, 5)
	e.editConfigMap(t)
	e.deleteService(t)

	drift := e.detect(t)
	if len(drift) != 3 {
		t.Fatalf("drift = %+v, want the Deployment, the ConfigMap and the Service", drift)
	}
	byID := driftByID(drift)
	expectChange(t, byID[e.id("apps", "Deployment")], "/spec/replicas", "5", "2")
	expectChange(t, byID[e.id("", "ConfigMap")], "/data/greeting", `"edited"`, `"hello"`)
	if svc := byID[e.id("", "Service")]; svc.Type != "create" || len(svc.Changes) != 0 {
		t.Errorf("Service drift = %+v, want create", svc)
	}
}

func TestDetectDrift_ignoresWhatTheReleaseDoesNotSet(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	// Another manager's label, annotation and field: the chart sets none of
	// them, so they are not drift, and correcting drift leaves them.
	e.patch(t, deploymentsGVR, "podinfo", types.MergePatchType,
		`{"metadata":{"labels":{"team":"a"},"annotations":{"example.com/owner":"a"}},"spec":{"minReadySeconds":7}}`)
	e.patch(t, configMapsGVR, "podinfo", types.MergePatchType, `{"metadata":{"labels":{"team":"a"}},"data":{"extra":"x"}}`)
	expectNoDrift(t, e.detect(t))

	e.scale(t, 3)
	if err := e.correct(t); err != nil {
		t.Fatal(err)
	}
	d := e.get(t, deploymentsGVR, "podinfo")
	if v, _, _ := unstructured.NestedInt64(d.Object, "spec", "minReadySeconds"); v != 7 {
		t.Errorf("minReadySeconds = %d after correction, want another manager's 7", v)
	}
	if d.GetLabels()["team"] != "a" || d.GetAnnotations()["example.com/owner"] != "a" {
		t.Errorf("correction removed another manager's metadata: %v %v", d.GetLabels(), d.GetAnnotations())
	}
	if v, _, _ := unstructured.NestedString(e.get(t, configMapsGVR, "podinfo").Object, "data", "extra"); v != "x" {
		t.Errorf("ConfigMap data.extra = %q after correction, want x", v)
	}
}

func TestDetectDrift_ignoreRules(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	e.scale(t, 5)
	e.editConfigMap(t)
	e.spec.DriftDetection.Ignore = []jsondiff.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Selector: &jsondiff.Selector{Kind: "Deployment"}},
		{Paths: []string{""}, Selector: &jsondiff.Selector{Kind: "ConfigMap", Name: "pod.*"}},
	}
	expectNoDrift(t, e.detect(t))

	// A rule without a selector applies to every object; one that selects
	// nothing changes nothing.
	e.spec.DriftDetection.Ignore = []jsondiff.IgnoreRule{
		{Paths: []string{"/data/greeting"}},
		{Paths: []string{"/spec/replicas"}, Selector: &jsondiff.Selector{Kind: "StatefulSet"}},
	}
	drift := e.detect(t)
	if len(drift) != 1 {
		t.Fatalf("drift = %+v, want the Deployment only", drift)
	}
	expectChange(t, drift[0], "/spec/replicas", "5", "2")
}

func TestDetectDrift_disabledByMetadata(t *testing.T) {
	t.Parallel()
	// In the chart (here put there by a post-renderer) ...
	e := installPodinfo(t, &Spec{PostRenderers: []PostRenderer{kustomizePR(Kustomize{Patches: []KustomizePatch{{
		Patch:  `[{"op": "add", "path": "/metadata/annotations", "value": {"helm.toolkit.fluxcd.io/driftDetection": "disabled"}}]`,
		Target: &KustomizeSelector{Kind: "Deployment"},
	}}})}})
	e.scale(t, 5)
	// ... or in the cluster, as a label.
	e.patch(t, configMapsGVR, "podinfo", types.MergePatchType,
		`{"metadata":{"labels":{"helm.toolkit.fluxcd.io/driftDetection":"disabled"}},"data":{"greeting":"edited"}}`)
	expectNoDrift(t, e.detect(t))

	if err := e.correct(t); err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(e.get(t, deploymentsGVR, "podinfo").Object, "spec", "replicas"); r != 5 {
		t.Errorf("replicas = %d: correction touched an excluded object", r)
	}
	if g, _, _ := unstructured.NestedString(e.get(t, configMapsGVR, "podinfo").Object, "data", "greeting"); g != "edited" {
		t.Errorf("greeting = %q: correction touched an excluded object", g)
	}
}

func TestCorrectDrift_restoresObjectsWithoutAnUpgrade(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	e.scale(t, 5)
	e.editConfigMap(t)
	e.deleteService(t)

	if err := e.correct(t); err != nil {
		t.Fatalf("correct drift: %v", err)
	}
	expectNoDrift(t, e.detect(t))

	if r, _, _ := unstructured.NestedInt64(e.get(t, deploymentsGVR, "podinfo").Object, "spec", "replicas"); r != 2 {
		t.Errorf("replicas = %d, want 2", r)
	}
	if g, _, _ := unstructured.NestedString(e.get(t, configMapsGVR, "podinfo").Object, "data", "greeting"); g != "hello" {
		t.Errorf("greeting = %q, want hello", g)
	}
	svc := &corev1.Service{}
	if err := e.c.Get(testenv.Context(t), client.ObjectKey{Namespace: e.ns, Name: "podinfo"}, svc); err != nil {
		t.Fatalf("Service not recreated: %v", err)
	}
	// Recreated as Helm made it: with the ownership metadata, so that the
	// next Helm upgrade adopts it.
	if svc.Labels[helmManagedByLabel] != "Helm" || svc.Annotations[helmReleaseNameAnnotation] != "podinfo" ||
		svc.Annotations[helmReleaseNamespaceAnnotation] != e.ns || svc.Labels[OriginNameLabel] != "podinfo" {
		t.Errorf("recreated Service metadata: %v %v", svc.Labels, svc.Annotations)
	}

	// Not a Helm upgrade: the release is still revision 1, the only one.
	history, err := releaseStore{e.helm.Releases}.History("podinfo")
	if err != nil {
		t.Fatal(err)
	}
	if len(history) != 1 || history[0].Version != 1 || history[0].Info.Status != helmcommon.StatusDeployed {
		t.Errorf("history after correction: %d releases, latest %d %s", len(history), history[0].Version, history[0].Info.Status)
	}
}

func TestCorrectDrift_leavesIgnoredFields(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	e.spec.DriftDetection.Ignore = []jsondiff.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Selector: &jsondiff.Selector{Kind: "Deployment"}},
	}
	// An autoscaler's replicas (ignored) and someone's image (drift), on one
	// object: correction takes the image back and leaves the replicas.
	e.scale(t, 4)
	e.patch(t, deploymentsGVR, "podinfo", types.StrategicMergePatchType,
		`{"spec":{"template":{"spec":{"containers":[{"name":"podinfo","image":"example.com/other:1"}]}}}}`)
	drift := e.detect(t)
	if len(drift) != 1 {
		t.Fatalf("drift = %+v, want the Deployment's image", drift)
	}
	expectChange(t, drift[0], "/spec/template/spec/containers/0/image", `"example.com/other:1"`, `"ghcr.io/stefanprodan/podinfo:6.0.0"`)

	if err := e.correct(t); err != nil {
		t.Fatal(err)
	}
	expectNoDrift(t, e.detect(t))
	d := e.get(t, deploymentsGVR, "podinfo")
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 4 {
		t.Errorf("replicas = %d, want the ignored 4", r)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "ghcr.io/stefanprodan/podinfo:6.0.0" {
		t.Errorf("image = %v, want the chart's", img)
	}
}

func TestCorrectDrift_errorNamesTheObject(t *testing.T) {
	t.Parallel()
	e := installPodinfo(t, &Spec{})
	e.deleteService(t)
	// Detected before the quota exists: the Service is to be created.
	drift := e.detect(t)
	// A quota that admits no Service: the Service cannot be made again.
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "no-services"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}},
	}
	if err := e.c.Create(testenv.Context(t), quota); err != nil {
		t.Fatal(err)
	}
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for err == nil && time.Now().Before(deadline) { // the quota controller fills status first
		err = correctDrift(testenv.Context(t), e.f, e.spec, e.rel, drift)
		if err == nil {
			_ = e.c.Delete(testenv.Context(t), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "podinfo"}})
			time.Sleep(time.Second)
		}
	}
	t.Logf("error: %v", err)
	want := fmt.Sprintf("helmrelease %s/podinfo: drift correction: Service/%s/podinfo: ", e.ns, e.ns)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want %q followed by the Forbidden cause", err, want)
	}
	if strings.Count(err.Error(), "Service/") != 1 {
		t.Errorf("error names the object more than once: %v", err)
	}
}

// restMapper knows the kinds of the unit tests below, without a cluster.
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Service"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, meta.RESTScopeRoot)
	return m
}

func TestDriftObjects_areWhatHelmApplied(t *testing.T) {
	rel := &helmrelease.Release{Name: "podinfo", Namespace: "apps", Manifest: `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: here, labels: {app: x}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: there, namespace: elsewhere}
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec:
  ports: [{port: 80}]
`}
	objs, err := driftObjects(rel, restMapper())
	if err != nil {
		t.Fatal(err)
	}
	wantNS := map[string]string{"reader": "", "here": "apps", "there": "elsewhere", "svc": "apps"}
	for _, o := range objs {
		if o.GetNamespace() != wantNS[o.GetName()] {
			t.Errorf("%s: namespace %q, want %q", o.GetName(), o.GetNamespace(), wantNS[o.GetName()])
		}
		l, a := o.GetLabels(), o.GetAnnotations()
		if l[helmManagedByLabel] != "Helm" || a[helmReleaseNameAnnotation] != "podinfo" || a[helmReleaseNamespaceAnnotation] != "apps" {
			t.Errorf("%s: no Helm ownership metadata: %v %v", o.GetName(), l, a)
		}
	}
	if objs[1].GetLabels()["app"] != "x" {
		t.Errorf("chart labels lost: %v", objs[1].GetLabels())
	}
	ports, _, _ := unstructured.NestedSlice(objs[3].Object, "spec", "ports")
	if p := ports[0].(map[string]any)["protocol"]; p != "TCP" {
		t.Errorf("port protocol = %v, want the server's default TCP", p)
	}

	rel.Manifest += "---\napiVersion: example.com/v1\nkind: Unknown\nmetadata: {name: u}\n"
	if _, err := driftObjects(rel, restMapper()); err == nil || !strings.Contains(err.Error(), "Unknown/u") {
		t.Errorf("unknown kind: error %v, want one naming the object", err)
	}
}

func TestValidateIgnoreRules_errorsNameTheField(t *testing.T) {
	valid := []jsondiff.IgnoreRule{
		{Paths: []string{"", "/spec/replicas", "/metadata/annotations/a~1b"}},
		{Paths: []string{"/data"}, Selector: &jsondiff.Selector{Kind: "Config.*", LabelSelector: "app in (a,b)", AnnotationSelector: "x=y"}},
	}
	if err := ValidateIgnoreRules(valid); err != nil {
		t.Fatalf("valid rules: %v", err)
	}
	tests := []struct {
		name  string
		rule  jsondiff.IgnoreRule
		field string
	}{
		{"pointer without slash", jsondiff.IgnoreRule{Paths: []string{"/ok", "spec/replicas"}}, "drift_detection.ignore[1].paths[1]"},
		{"no paths", jsondiff.IgnoreRule{}, "drift_detection.ignore[1].paths"},
		{"label selector", jsondiff.IgnoreRule{Paths: []string{""}, Selector: &jsondiff.Selector{LabelSelector: "a in (b"}}, "drift_detection.ignore[1].target.label_selector"},
		{"annotation selector", jsondiff.IgnoreRule{Paths: []string{""}, Selector: &jsondiff.Selector{AnnotationSelector: "!!"}}, "drift_detection.ignore[1].target.annotation_selector"},
		{"kind regexp", jsondiff.IgnoreRule{Paths: []string{""}, Selector: &jsondiff.Selector{Kind: "Deploy(ment"}}, "drift_detection.ignore[1].target.kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateIgnoreRules([]jsondiff.IgnoreRule{valid[0], tt.rule})
			var fe *fielderr.Error
			if !errors.As(err, &fe) || fe.Path != tt.field {
				t.Errorf("error %v, want a *fielderr.Error on %s", err, tt.field)
			}
		})
	}
}
