package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newFactory returns a factory for the test cluster, as the provider makes one.
func newFactory(t *testing.T) *Factory {
	t.Helper()
	env := testenv.Need(t)
	return NewFactory(Config{ConfigPaths: []string{env.Cluster.Kubeconfig}}, "")
}

func mustObjects(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ReadObjects(manifests)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

const deploymentManifests = `
apiVersion: v1
kind: Namespace
metadata:
  name: kube-test-deploy
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: kube-test-deploy
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ghcr.io/stefanprodan/podinfo:6.0.0
`

// A Deployment applied through the manager becomes Current by kstatus on the
// local cluster: kwok runs its pods and the controller-manager rolls it out.
func TestApplyStaged_deploymentBecomesCurrent(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.UniqueName(t, "kube-test-deploy")
	objs := mustObjects(t, strings.ReplaceAll(deploymentManifests, "kube-test-deploy", ns))
	cs, err := m.ApplyStaged(ctx, objs, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cs.Entries); got != 2 {
		t.Fatalf("change set has %d entries, want 2: %v", got, cs.ToMap())
	}
	for _, e := range cs.Entries {
		if e.Action != "created" {
			t.Fatalf("%s: action %s, want created", e.Subject, e.Action)
		}
	}
	if err := m.Wait(ctx, Inventory(objs), WaitOptions{Interval: time.Second, Timeout: time.Minute}); err != nil {
		t.Fatalf("deployment did not become Current: %v", err)
	}
	var d appsv1.Deployment
	if err := m.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 2 {
		t.Fatalf("available replicas = %d, want 2", d.Status.AvailableReplicas)
	}

	// A second apply of the same objects changes nothing.
	cs, err = m.ApplyStaged(ctx, objs, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cs.Entries {
		if e.Action != "unchanged" {
			t.Fatalf("second apply: %s %s, want unchanged", e.Subject, e.Action)
		}
	}
}

const crdTemplate = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: KINDS.mapper.stevedore.dev
spec:
  group: mapper.stevedore.dev
  scope: Namespaced
  names: {kind: KIND, plural: KINDS, singular: SINGULAR, listKind: KINDList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
---
apiVersion: mapper.stevedore.dev/v1
kind: KIND
metadata:
  name: one
  namespace: default
spec:
  size: 1
`

func crdAndInstance(kind string) string {
	lower := strings.ToLower(kind)
	r := strings.NewReplacer("KINDS", lower+"s", "KINDList", kind+"List", "KIND", kind, "SINGULAR", lower)
	return r.Replace(crdTemplate)
}

// The shared RESTMapper maps a kind whose CRD was created a moment before, in a
// group it had never seen, and then a second kind added to that group after the
// group was discovered, without a new factory.
func TestRESTMapper_seesNewCRDs(t *testing.T) {
	ctx := testenv.Context(t)
	f := newFactory(t)
	m, err := f.Manager()
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := f.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	// Warm the mapper, as the first resources of a plan would.
	if _, err := mapper.RESTMapping(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), "v1"); err != nil {
		t.Fatal(err)
	}

	for _, kind := range []string{"Widget", "Gadget"} {
		// CRD and custom resource in one staged apply: the CRD is applied and
		// established first, then the instance is mapped and applied.
		if _, err := m.ApplyStaged(ctx, mustObjects(t, crdAndInstance(kind)), ApplyOptions{}); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("mapper.stevedore.dev/v1")
		u.SetKind(kind)
		if err := m.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "one"}, u); err != nil {
			t.Fatalf("%s: get the instance: %v", kind, err)
		}
	}
}

const driftManifests = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
  greeting: hello
  color: blue
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: default
stringData:
  password: s3cret
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: default
spec:
  selector: {app: web}
  ports:
  - port: 80
`

// Drift is what our own apply would change: edited and deleted objects are
// drift, fields and labels other managers added are not, Secret values are
// masked, and ignore rules and the exclusion selector hold.
func TestDrift_isWhatOurApplyWouldChange(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ApplyStaged(ctx, mustObjects(t, driftManifests), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	drift, err := m.Drift(ctx, mustObjects(t, driftManifests), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 0 {
		t.Fatalf("drift right after apply: %+v", drift)
	}

	c := m.Client()
	// Another manager edits a field we own, adds a label of its own and rewrites
	// the Secret; the Service is deleted.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "settings"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "bonjour"
	cm.Labels = map[string]string{"team": "other"}
	if err := c.Update(ctx, &cm, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	var sec corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "creds"}, &sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["password"] = []byte("changed")
	if err := c.Update(ctx, &sec, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	svc.Namespace, svc.Name = "default", "web"
	if err := c.Delete(ctx, svc); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	drift, err = m.Drift(ctx, mustObjects(t, driftManifests), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Drift{}
	for _, d := range drift {
		got[d.ID] = d
	}
	if len(got) != 3 {
		t.Fatalf("want 3 drifted objects, got %s", dump(drift))
	}
	cmDrift := got["default_settings__ConfigMap"]
	if cmDrift.Type != "update" || len(cmDrift.Changes) != 1 {
		t.Fatalf("ConfigMap drift = %s, want one change (the label another manager added is not drift)", dump(cmDrift))
	}
	if ch := cmDrift.Changes[0]; ch.Path != "/data/greeting" || ch.From != `"bonjour"` || ch.To != `"hello"` {
		t.Fatalf("ConfigMap change = %+v, want /data/greeting bonjour -> hello", ch)
	}
	secDrift := got["default_creds__Secret"]
	if secDrift.Type != "update" || len(secDrift.Changes) == 0 {
		t.Fatalf("Secret drift = %s", dump(secDrift))
	}
	for _, ch := range secDrift.Changes {
		if strings.Contains(ch.From+ch.To, "s3cret") || strings.Contains(ch.From+ch.To, "changed") ||
			strings.Contains(ch.From+ch.To, "czNjcmV0") || strings.Contains(ch.From+ch.To, "Y2hhbmdlZA") {
			t.Fatalf("Secret value leaked into the drift report: %+v", ch)
		}
	}
	if d := got["default_web__Service"]; d.Type != "create" {
		t.Fatalf("deleted Service drift = %s, want create", dump(d))
	}

	// Ignore rules: the ConfigMap's data path, the whole Secret.
	drift, err = m.Drift(ctx, mustObjects(t, driftManifests), DriftOptions{IgnoreRules: []jsondiff.IgnoreRule{
		{Paths: []string{"/data/greeting"}},
		{Paths: []string{""}, Selector: &jsondiff.Selector{Kind: "Secret"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 1 || drift[0].ID != "default_web__Service" {
		t.Fatalf("with ignore rules only the Service should drift, got %s", dump(drift))
	}

	// One apply corrects it all.
	if _, err := m.ApplyStaged(ctx, mustObjects(t, driftManifests), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	drift, err = m.Drift(ctx, mustObjects(t, driftManifests), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 0 {
		t.Fatalf("drift after correction: %s", dump(drift))
	}
}

// An object that another field manager scales is not drift as long as we do not
// set the field: the HPA case.
func TestDrift_fieldOwnedByAnotherManager(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	const noReplicas = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: scaled
  namespace: default
spec:
  selector:
    matchLabels: {app: scaled}
  template:
    metadata:
      labels: {app: scaled}
    spec:
      containers:
      - name: web
        image: ghcr.io/stefanprodan/podinfo:6.0.0
`
	if _, err := m.ApplyStaged(ctx, mustObjects(t, noReplicas), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	// Let the deployment controller annotate and roll it out first: its writes
	// between our read and our dry-run would be a race, not drift.
	if err := m.Wait(ctx, Inventory(mustObjects(t, noReplicas)), WaitOptions{Interval: time.Second, Timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	scale := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"scaled","namespace":"default"},"spec":{"replicas":3}}`), &scale.Object); err != nil {
		t.Fatal(err)
	}
	if err := m.Client().Apply(ctx, client.ApplyConfigurationFromUnstructured(scale), client.FieldOwner("hpa-controller"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	drift, err := m.Drift(ctx, mustObjects(t, noReplicas), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 0 {
		t.Fatalf("replicas owned by another manager reported as drift: %s", dump(drift))
	}
}

// A write by someone else between drift detection's read of an object and its
// dry-run (a controller annotating it) is not drift: the diff is done again
// on a consistent pair. The write is made from inside the first dry-run
// request, so the race happens every time.
func TestDrift_writeBetweenReadAndDryRunIsNotDrift(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, m.Client(), "")
	cm := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: raced
  namespace: ` + ns + `
data: {k: v}
`
	if _, err := m.ApplyStaged(ctx, mustObjects(t, cm), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	real := m.Client()
	var dryRuns atomic.Int32
	m.client = interceptor.NewClient(noWatch{real}, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if dryRuns.Add(1) == 1 {
				other := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"raced","namespace":"`+ns+`","annotations":{"controller.example/seen":"yes"}}}`), &other.Object); err != nil {
					return err
				}
				if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("some-controller")); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	drift, err := m.Drift(ctx, mustObjects(t, cm), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 0 {
		t.Fatalf("a write between read and dry-run reported as drift: %s", dump(drift))
	}
	if n := dryRuns.Load(); n != 2 {
		t.Fatalf("%d dry-runs, want 2: the first raced, the second was consistent", n)
	}
}

// noWatch makes the manager's client a client.WithWatch, which the
// interceptor wraps; drift detection never watches.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not used by drift detection")
}

// Delete removes only objects carrying the inclusion labels, and objects that
// are gone already are not an error.
func TestDelete_onlyOwned(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	objs := mustObjects(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: owned
  namespace: default
  labels: {stevedore.dev/owner: me}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: foreign
  namespace: default
`)
	if _, err := m.ApplyStaged(ctx, objs, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := obj("v1", "ConfigMap", "default", "never-existed")
	cs, err := m.Delete(ctx, append(mustObjects(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: owned, namespace: default}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: foreign, namespace: default}
`), gone), DeleteOptions{Inclusions: map[string]string{"stevedore.dev/owner": "me"}})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, e := range cs.Entries {
		actions[e.ObjMetadata.Name] = string(e.Action)
	}
	if actions["owned"] != "deleted" || actions["foreign"] != "skipped" {
		t.Fatalf("actions = %v, want owned deleted and foreign skipped", actions)
	}
	var cm corev1.ConfigMap
	if err := m.Client().Get(ctx, client.ObjectKey{Namespace: "default", Name: "foreign"}, &cm); err != nil {
		t.Fatalf("the object without our labels must survive: %v", err)
	}
}

func dump(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
