package resourceset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func newEngine(t testing.TB) (*Engine, client.Client) {
	t.Helper()
	f := kube.NewFactory(kube.Config{ConfigPaths: []string{testenv.Need(t).Cluster.Kubeconfig}}, "")
	c, err := f.Client()
	if err != nil {
		t.Fatal(err)
	}
	return New(f), c
}

func get(t *testing.T, c client.Client, apiVersion, kind, ns, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return u, true
}

// fluxCRDs are minimal CRDs with the group, kinds and scope of Flux's
// OCIRepository and HelmRelease: no Flux controller runs here.
const fluxCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ocirepositories.source.toolkit.fluxcd.io}
spec:
  group: source.toolkit.fluxcd.io
  scope: Namespaced
  names: {kind: OCIRepository, plural: ocirepositories, singular: ocirepository, listKind: OCIRepositoryList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: helmreleases.helm.toolkit.fluxcd.io}
spec:
  group: helm.toolkit.fluxcd.io
  scope: Namespaced
  names: {kind: HelmRelease, plural: helmreleases, singular: helmrelease, listKind: HelmReleaseList}
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// The seed example: two tenants x (OCIRepository + HelmRelease), with the CRDs
// applied by the same set. The plan knows the kinds from the set's CRDs before
// they exist; the apply establishes the CRDs first; removing a tenant prunes
// its Flux objects first.
func TestEngine_seedExampleCRDsAndCustomResources(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	spec := &Spec{
		Name: "apps", Namespace: "default",
		Inputs:            []map[string]any{{"tenant": "team1", "version": "6.7.x"}, {"tenant": "team2", "version": "6.6.x"}},
		ResourcesTemplate: fluxCRDs,
		Resources: []map[string]any{
			mustMap(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: podinfo-<< inputs.tenant >>
spec:
  interval: 10m
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref:
    semver: << inputs.version | quote >>
`),
			mustMap(t, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo-<< inputs.tenant >>
spec:
  interval: 1h
  chartRef:
    kind: OCIRepository
    name: podinfo-<< inputs.tenant >>
  values:
    replicaCount: << len inputs.tenant >>
`),
		},
	}
	plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatalf("plan before the CRDs exist: %v", err)
	}
	want := []string{
		"_helmreleases.helm.toolkit.fluxcd.io_apiextensions.k8s.io_CustomResourceDefinition",
		"_ocirepositories.source.toolkit.fluxcd.io_apiextensions.k8s.io_CustomResourceDefinition",
		"default_podinfo-team1_helm.toolkit.fluxcd.io_HelmRelease",
		"default_podinfo-team1_source.toolkit.fluxcd.io_OCIRepository",
		"default_podinfo-team2_helm.toolkit.fluxcd.io_HelmRelease",
		"default_podinfo-team2_source.toolkit.fluxcd.io_OCIRepository",
	}
	if got := entryIDs(plan.Inventory); got != strings.Join(want, " ") {
		t.Fatalf("planned inventory\n %s\nwant\n %s", got, strings.Join(want, " "))
	}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if entryIDs(res.Inventory) != entryIDs(plan.Inventory) || res.Manifests != plan.Manifests {
		t.Fatal("apply must leave exactly the planned inventory and manifests")
	}
	hr, ok := get(t, c, "helm.toolkit.fluxcd.io/v2", "HelmRelease", "default", "podinfo-team2")
	if !ok {
		t.Fatal("HelmRelease not applied")
	}
	if n, _, _ := unstructured.NestedInt64(hr.Object, "spec", "values", "replicaCount"); n != 5 {
		t.Fatalf("replicaCount = %d", n)
	}

	spec.Inputs = spec.Inputs[:1]
	res, err = e.Apply(ctx, spec, res.Inventory, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inventory) != 4 {
		t.Fatalf("inventory after removing team2 = %s", entryIDs(res.Inventory))
	}
	if _, ok := get(t, c, "source.toolkit.fluxcd.io/v1", "OCIRepository", "default", "podinfo-team2"); ok {
		t.Fatal("team2's OCIRepository not pruned")
	}

	left, err := e.Delete(ctx, spec, res.Inventory)
	if err != nil || len(left) != 0 {
		t.Fatalf("delete: left %v, err %v", left, err)
	}
	if _, ok := get(t, c, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "helmreleases.helm.toolkit.fluxcd.io"); ok {
		t.Fatal("CRD not deleted")
	}
}

func entryIDs(entries []kube.Entry) string {
	var s []string
	for _, e := range entries {
		s = append(s, e.ID)
	}
	return strings.Join(s, " ")
}

// A dependency gate: the apply waits until a Secret created later holds the
// value the CEL expression wants, then applies.
func TestEngine_dependencyGate(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "")
	spec := &Spec{
		Name: "gated", Namespace: ns, Timeout: time.Minute,
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gated\n",
		Dependencies: []Dependency{{
			APIVersion: "v1", Kind: "Secret", Name: "gate", Namespace: ns, Ready: true,
			ReadyExpr: "base64.decode(data.?open.orValue('')) == b'yes'",
		}},
	}
	go func() {
		time.Sleep(time.Second)
		sec := &corev1.Secret{StringData: map[string]string{"open": "no"}}
		sec.Namespace, sec.Name = ns, "gate"
		if err := c.Create(context.Background(), sec); err != nil {
			t.Error(err)
			return
		}
		time.Sleep(6 * time.Second)
		sec.StringData = map[string]string{"open": "yes"}
		if err := c.Update(context.Background(), sec); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 6*time.Second {
		t.Fatalf("applied after %s, before the gate opened", waited)
	}
	if len(res.Inventory) != 1 {
		t.Fatalf("inventory %v", res.Inventory)
	}

	// An unmet dependency fails at the timeout, naming it.
	spec.Dependencies[0].Name = "never"
	spec.Timeout = 2 * time.Second
	_, err = e.Apply(ctx, spec, res.Inventory, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "Secret "+ns+"/never: not found") {
		t.Fatalf("want the unmet dependency named, got %v", err)
	}
}

// wait blocks until a Deployment is Available (Current by kstatus).
func TestEngine_waitForDeployment(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	spec := &Spec{
		Name: "web", Namespace: "default", Wait: true, Timeout: 2 * time.Minute,
		ResourcesTemplate: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: waited}
spec:
  replicas: 2
  selector: {matchLabels: {app: waited}}
  template:
    metadata: {labels: {app: waited}}
    spec:
      containers: [{name: web, image: ghcr.io/stefanprodan/podinfo:6.0.0}]
`,
	}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := get(t, c, "apps/v1", "Deployment", "default", "waited")
	if n, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas"); n != 2 {
		t.Fatalf("apply returned before the Deployment was available: %d replicas", n)
	}
	if res.Conditions[0].Status != "True" {
		t.Fatalf("conditions %+v", res.Conditions)
	}
}

// An immutable field change fails without force and recreates the object
// with it; the failed apply keeps the inventory.
func TestEngine_immutableFieldAndForce(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "")
	job := func(image string) string {
		return `
apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: ` + image + `}]
`
	}
	spec := &Spec{Name: "jobs", Namespace: ns, Timeout: time.Minute, ResourcesTemplate: job("busybox:1")}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := get(t, c, "batch/v1", "Job", ns, "once")

	spec.ResourcesTemplate = job("busybox:2")
	failed, err := e.Apply(ctx, spec, res.Inventory, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("want an immutable field error, got %v", err)
	}
	if entryIDs(failed.Inventory) != entryIDs(res.Inventory) || failed.Conditions[0].Reason != ReasonReconciliationFailed {
		t.Fatalf("a failed apply must keep the inventory: %v %+v", failed.Inventory, failed.Conditions)
	}

	spec.Force = true
	if _, err := e.Apply(ctx, spec, failed.Inventory, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	second, _ := get(t, c, "batch/v1", "Job", ns, "once")
	if second.GetUID() == first.GetUID() {
		t.Fatal("force must recreate the Job")
	}
}

// Drift lists edited and deleted objects of the set, sorted by ID.
func TestEngine_drift(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	spec := &Spec{Name: "drifty", Namespace: "default", ResourcesTemplate: `
apiVersion: v1
kind: ConfigMap
metadata: {name: drifty-a}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: drifty-b}
data: {k: v}
`}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The apply knows what it applied: both in sync, and a refresh with
	// those fingerprints dry-runs neither. Each refresh is a new plan's, with
	// an engine of its own (a new provider process): the refreshes of one
	// share their metadata LISTs.
	if len(res.InSync) != 2 {
		t.Fatalf("fingerprints after the apply: %v, want both objects", res.InSync)
	}
	refresh, _ := newEngine(t)
	if r, err := refresh.CheckDrift(ctx, spec, res.Inventory, res.InSync); err != nil || len(r.DryRun) != 0 || len(r.Drift) != 0 {
		t.Fatalf("refresh after the apply: %+v, %v; want no dry-run", r, err)
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "default", "drifty-b"
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// Deleted since: found again with the fingerprints of the apply.
	refresh, _ = newEngine(t)
	if r, err := refresh.CheckDrift(ctx, spec, res.Inventory, res.InSync); err != nil || len(r.Drift) != 1 || r.Drift[0].Type != "create" {
		t.Fatalf("refresh after a delete: %+v, %v", r, err)
	}
	drift, err := e.Drift(ctx, spec, res.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	if len(drift) != 1 || drift[0].ID != "default_drifty-b__ConfigMap" || drift[0].Type != "create" {
		t.Fatalf("drift = %+v", drift)
	}
}

// service_account_name impersonates the service account: what its RBAC does
// not allow fails with an error naming it, and what it allows is applied.
func TestEngine_impersonation(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	name := uniqueName("limited")
	sa := &corev1.ServiceAccount{}
	sa.Namespace, sa.Name = "default", name
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Name: name, Namespace: "default", ServiceAccountName: name, Timeout: 30 * time.Second,
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata: {a: b}\n"}
	start := time.Now()
	_, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `"system:serviceaccount:default:`+name+`" cannot`) {
		t.Fatalf("want a forbidden error naming the service account, got %v", err)
	}
	if d := time.Since(start); d < kube.ForbiddenRetryWindow/2 {
		t.Errorf("the denial stood after %v: it is retried for %v first", d, kube.ForbiddenRetryWindow)
	}

	// A grant made while the apply is being denied is honoured by the same
	// apply: the apply starts first, the RoleBinding comes a second later.
	role := mustObjectsYAML(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: `+name+`, namespace: default}
rules: [{apiGroups: [""], resources: [configmaps], verbs: ["*"]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: `+name+`, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: `+name+`}
subjects: [{kind: ServiceAccount, name: `+name+`, namespace: default}]
`)
	granted := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		for _, o := range role {
			if err := c.Create(ctx, o); err != nil {
				granted <- err
				return
			}
		}
		granted <- nil
	}()
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if gerr := <-granted; gerr != nil {
		t.Fatal(gerr)
	}
	if err != nil {
		t.Fatalf("granted during the apply, still failed: %v", err)
	}
	t.Cleanup(func() {
		_, _ = e.Delete(context.Background(), spec, res.Inventory)
		for _, o := range role {
			_ = c.Delete(context.Background(), o)
		}
		_ = c.Delete(context.Background(), sa)
	})
}

// A service_account_name that does not exist is said at once, on the
// attribute: a plan warning (the apply may come after another resource
// creates it), with what the apply would change unknown, and an apply that
// fails before any request made as it; not after each request's retries.
func TestEngine_missingServiceAccount(t *testing.T) {
	ctx := testenv.Context(t)
	e, _ := newEngine(t)
	name := uniqueName("nosa")
	spec := &Spec{Name: name, Namespace: "default", ServiceAccountName: name + "-nobody", Timeout: 30 * time.Second,
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata: {a: b}\n"}
	want := "service account default/" + name + "-nobody does not exist"
	fast := kube.ForbiddenRetryWindow / 2

	start := time.Now()
	res, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Warnings {
		found = found || w.Path == "service_account_name" && strings.Contains(w.Message, want)
	}
	if !found || !res.Undecided["default_"+name+"__ConfigMap"] {
		t.Errorf("plan: warnings %+v, undecided %v; want a warning on service_account_name and the ConfigMap undecided", res.Warnings, res.Undecided)
	}
	pv, err := e.Preview(ctx, spec)
	if err != nil || pv.Unknown == "" || pv.Changes != nil {
		t.Errorf("preview: %+v, %v; want its changes unknown", pv, err)
	}
	if _, err := e.CheckDrift(ctx, spec, nil, nil); fielderr.PathOf(err) != "service_account_name" {
		t.Errorf("drift check: %v, want an error on service_account_name", err)
	}
	if d := time.Since(start); d > fast {
		t.Errorf("the plan took %v", d)
	}

	start = time.Now()
	_, err = e.Apply(ctx, spec, nil, ApplyOptions{})
	var missing *kube.MissingServiceAccountError
	if !errors.As(err, &missing) || fielderr.PathOf(err) != "service_account_name" || !strings.Contains(err.Error(), want) {
		t.Fatalf("apply: %v, want a missing service account on service_account_name", err)
	}
	if d := time.Since(start); d > fast {
		t.Errorf("the apply failed after %v", d)
	}
}

func mustObjectsYAML(t *testing.T, s string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := kube.ReadObjects(s)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
