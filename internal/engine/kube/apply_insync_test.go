package kube

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestApplyStaged_inSyncIsWhatADriftCheckFinds: the fingerprints an apply
// returns, taken from its own requests with no drift check of its own, are
// the fingerprints a drift check takes right after it, whether the apply
// created the objects (claims), applied them with ssa's dry-run and apply,
// or found them unchanged; a drift check with them dry-runs nothing and
// finds no drift. An apply with them leaves alone, without a request but
// one metadata LIST per kind, the objects nobody wrote since, and applies
// the one another manager edited.
func TestApplyStaged_inSyncIsWhatADriftCheckFinds(t *testing.T) {
	ctx := testenv.Context(t)
	m := mustManager(t, newFactory(t))
	ns := testenv.Namespace(t, m.Client(), "")
	owner := map[string]string{"example.com/owner": "me"}
	manifest := `
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: ` + ns + `, labels: {example.com/owner: me}}
data: {k: v}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: ` + ns + `, labels: {example.com/owner: me}}
stringData: {token: s3cr3t}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ` + ns + `, labels: {example.com/owner: me}}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`
	objs := mustObjects(t, manifest)
	var ids []string
	claims := Claims{}
	for _, o := range objs {
		ids = append(ids, ID(o))
		claims[ID(o)] = Claim{Create: true}
	}
	conf := ID(objs[0])
	// check is a drift check of every object, with since when given.
	check := func(since Fingerprints) *DriftReport {
		t.Helper()
		r, err := m.CheckDrift(ctx, objs, DriftOptions{Since: since, Owner: owner})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Drift) != 0 {
			t.Fatalf("drift %s, want none", dump(r.Drift))
		}
		return r
	}
	sameAsCheck := func(step string, got Fingerprints) {
		t.Helper()
		want := check(nil).InSync
		for _, id := range ids {
			if got[id] != want[id] || want[id].UID == "" {
				t.Fatalf("%s: fingerprint of %s is %+v, a drift check's is %+v", step, id, got[id], want[id])
			}
		}
		if r := check(got); len(r.DryRun) != 0 {
			t.Fatalf("%s: a drift check with the apply's fingerprints dry-runs %v, want none", step, r.DryRun)
		}
	}

	created, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{Claims: claims})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(entriesWith(created.ChangeSet, ssa.CreatedAction)); n != 3 {
		t.Fatalf("created %d objects, want 3: %v", n, created.Entries)
	}
	sameAsCheck("created by claims", created.InSync)

	// Again with no fingerprints: ssa reads and dry-runs each object, and
	// leaves them as they are.
	again, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(entriesWith(again.ChangeSet, ssa.UnchangedAction)); n != 3 {
		t.Fatalf("%d objects unchanged, want 3: %v", n, again.Entries)
	}
	sameAsCheck("unchanged by ssa", again.InSync)

	// Another manager edits the ConfigMap: an apply with the fingerprints
	// applies it alone, and reads the others with one LIST per kind.
	editConfigMap(t, m.Client(), client.ObjectKey{Namespace: ns, Name: "conf"})
	counted := &countingClient{Client: m.client}
	cm := *m
	cm.client = counted
	fixed, err := cm.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{Since: again.InSync, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if got := entriesWith(fixed.ChangeSet, ssa.ConfiguredAction); !slices.Equal(got, []string{conf}) {
		t.Fatalf("configured %v, want only %s: %v", got, conf, fixed.Entries)
	}
	if n := len(entriesWith(fixed.ChangeSet, ssa.UnchangedAction)); n != 2 {
		t.Fatalf("%d objects unchanged, want 2: %v", n, fixed.Entries)
	}
	if l, g := counted.lists.Load(), counted.gets.Load(); l != 3 || g != 1 {
		t.Fatalf("%d LISTs and %d GETs, want one LIST per kind and one GET (ssa's, of the edited ConfigMap)", l, g)
	}
	live := &corev1.ConfigMap{}
	if err := m.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "conf"}, live); err != nil || live.Data["k"] != "v" {
		t.Fatalf("ConfigMap after the apply: %v, %v; want k=v again", live.Data, err)
	}
	sameAsCheck("an edit applied", fixed.InSync)

	// Nothing written since: nothing is applied, dry-run or read but with
	// one LIST per kind.
	counted.reset()
	steady, err := cm.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{Since: fixed.InSync, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(entriesWith(steady.ChangeSet, ssa.UnchangedAction)); n != 3 || !maps.Equal(steady.InSync, fixed.InSync) {
		t.Fatalf("steady apply: %v, fingerprints %v; want 3 unchanged, the same fingerprints", steady.Entries, steady.InSync)
	}
	if l, g, p := counted.lists.Load(), counted.gets.Load(), counted.patches.Load(); l != 3 || g != 0 || p != 0 {
		t.Fatalf("steady apply: %d LISTs, %d GETs, %d PATCHes; want 3, 0, 0", l, g, p)
	}
}

// entriesWith returns the IDs of the change set's entries with action a.
func entriesWith(cs *ssa.ChangeSet, a ssa.Action) []string {
	var out []string
	for _, e := range cs.Entries {
		if e.Action == a {
			out = append(out, e.ObjMetadata.String())
		}
	}
	return out
}

// failingLists is a client whose LISTs of one kind are forbidden, as for a
// service account allowed to get objects but not to list them.
type failingLists struct {
	*countingClient
	kind string
}

func (c failingLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	if gvk := list.GetObjectKind().GroupVersionKind(); gvk.Kind == c.kind+"List" {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", fmt.Errorf("list is not allowed"))
	}
	return c.Client.List(ctx, list, opts...)
}

// TestLookup_listsKindsWithManyObjects: the objects of a kind and namespace
// with lookupListMin or more of them are read with one metadata LIST, those
// of a kind with fewer with a GET each, and both give what a GET of each
// object gives: the existing objects with their labels, nil for the missing
// ones. When the LIST is forbidden, the objects are read with GETs.
func TestLookup_listsKindsWithManyObjects(t *testing.T) {
	ctx := testenv.Context(t)
	m := mustManager(t, newFactory(t))
	ns := testenv.Namespace(t, m.Client(), "")
	var objs []*unstructured.Unstructured
	for i := range lookupListMin + 2 {
		objs = append(objs, mustObjects(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d, namespace: %s}\ndata: {k: v}\n", i, ns))[0])
	}
	objs = append(objs, mustObjects(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: "+ns+"}\n")[0])
	// Half of the ConfigMaps and the Secret exist, some with labels.
	for i, o := range objs {
		if i%2 == 1 && i < lookupListMin+2 {
			continue
		}
		c := o.DeepCopy()
		if i%4 == 0 {
			c.SetLabels(map[string]string{"example.com/by": fmt.Sprint(i)})
		}
		if err := m.Client().Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// What a GET of each object reads.
	want := make([]string, len(objs))
	for i, o := range objs {
		live, errs := m.Lookup(ctx, []*unstructured.Unstructured{o})
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		if live[0] != nil {
			want[i] = fmt.Sprint(live[0].UID, live[0].ResourceVersion, live[0].Labels)
		}
	}
	lookup := func(c client.Client) []string {
		t.Helper()
		lm := *m
		lm.client = c
		live, errs := lm.Lookup(ctx, objs)
		got := make([]string, len(objs))
		for i := range objs {
			if errs[i] != nil {
				t.Fatalf("%s: %v", Describe(objs[i]), errs[i])
			}
			if live[i] != nil {
				got[i] = fmt.Sprint(live[i].UID, live[i].ResourceVersion, live[i].Labels)
			}
		}
		return got
	}
	counted := &countingClient{Client: m.client}
	if got := lookup(counted); !slices.Equal(got, want) {
		t.Fatalf("looked up %q, a GET each reads %q", got, want)
	}
	if l, g := counted.lists.Load(), counted.gets.Load(); l != 1 || g != 1 {
		t.Fatalf("%d LISTs and %d GETs, want one LIST of the ConfigMaps and one GET of the Secret", l, g)
	}
	forbidden := failingLists{countingClient: &countingClient{Client: m.client}, kind: "ConfigMap"}
	if got := lookup(forbidden); !slices.Equal(got, want) {
		t.Fatalf("with the LIST forbidden, looked up %q, a GET each reads %q", got, want)
	}
	if l, g := forbidden.lists.Load(), forbidden.gets.Load(); l != 1 || g != int64(len(objs)) {
		t.Fatalf("with the LIST forbidden: %d LISTs and %d GETs, want 1 and one GET each (%d)", l, g, len(objs))
	}
}

// refusingPrecondition is a client whose API server, unlike Kubernetes',
// refuses a server-side apply that carries createPrecondition.
type refusingPrecondition struct {
	client.Client
	refused *atomic.Int64
}

func (c refusingPrecondition) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if o, ok := obj.(interface{ GetResourceVersion() string }); ok && o.GetResourceVersion() == createPrecondition {
		c.refused.Add(1)
		return apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	return c.Client.Apply(ctx, obj, opts...)
}

// TestCreate_applyWithPreconditionCreatesOnly: a Create claim is one
// server-side apply that creates the object with its fields in our Apply
// entry, and fails with a *ClaimError, writing nothing, when the object
// exists; with an API server that refuses the precondition, a create and the
// move of its fields to our Apply entry do the same.
func TestCreate_applyWithPreconditionCreatesOnly(t *testing.T) {
	ctx := testenv.Context(t)
	m := mustManager(t, newFactory(t))
	ns := testenv.Namespace(t, m.Client(), "")
	desired := func(name, value string) *unstructured.Unstructured {
		return mustObjects(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {k: %s}\n", name, ns, value))[0]
	}
	refused := &atomic.Int64{}
	for _, c := range []struct {
		name   string
		client client.Client
	}{{"apply", m.client}, {"create-and-take", refusingPrecondition{m.client, refused}}} {
		cm := *m
		cm.client = c.client
		if _, err := cm.createAll(ctx, []*unstructured.Unstructured{desired(c.name, "v")}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		live := &corev1.ConfigMap{}
		if err := m.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: c.name}, live); err != nil {
			t.Fatal(err)
		}
		if mf := live.ManagedFields; len(mf) != 1 || mf[0].Manager != m.fieldManager || mf[0].Operation != "Apply" || live.Data["k"] != "v" {
			t.Fatalf("%s: created %v with managed fields %v; want k=v, all of it in our Apply entry", c.name, live.Data, mf)
		}
		if c.name == "create-and-take" && refused.Load() != 1 {
			t.Fatalf("%s: the precondition was refused %d times, want once", c.name, refused.Load())
		}
		_, err := cm.createAll(ctx, []*unstructured.Unstructured{desired(c.name, "other")})
		var ce *ClaimError
		if !errors.As(err, &ce) || !ce.Exists {
			t.Fatalf("%s: a create of an object that exists: %v, want a *ClaimError that says it exists", c.name, err)
		}
		again := &corev1.ConfigMap{}
		if err := m.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: c.name}, again); err != nil || again.ResourceVersion != live.ResourceVersion {
			t.Fatalf("%s: the refused create wrote the object: version %s, was %s (%v)", c.name, again.ResourceVersion, live.ResourceVersion, err)
		}
	}
}
