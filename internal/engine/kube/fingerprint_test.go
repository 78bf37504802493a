package kube

import (
	"slices"
	"testing"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestCheckDrift_skipsOnlyUnwrittenObjects: with the fingerprints of the last
// clean check, an object nobody wrote is not dry-run, and every kind of write
// in between (a scale, another manager's change, a delete and recreate under
// the same name, a status-only update) makes it dry-run again, so that no drift
// is missed; a new desired state or new ignore rules do too.
func TestCheckDrift_skipsOnlyUnwrittenObjects(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, m.Client(), "")
	manifest := `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf, namespace: ` + ns + `}
data: {k: v}
`
	objs := mustObjects(t, manifest)
	if _, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(opts DriftOptions) *DriftReport {
		t.Helper()
		r, err := m.CheckDrift(ctx, objs, opts)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	dep, conf := idOf(objs[0]), idOf(objs[1])
	first := check(DriftOptions{})
	if len(first.Drift) != 0 || len(first.DryRun) != 2 || len(first.InSync) != 2 {
		t.Fatalf("first check: drift %s, dry-run %v, %d fingerprints; want no drift, both, 2", dump(first.Drift), first.DryRun, len(first.InSync))
	}
	// The ConfigMap, which no controller writes, is not dry-run again. (The
	// deployment controller and kwok write the Deployment's status for a
	// while after each change, which makes it dry-run: that is the point.)
	r := check(DriftOptions{Since: first.InSync})
	if slices.Contains(r.DryRun, conf) || len(r.Drift) != 0 || len(r.InSync) != 2 {
		t.Fatalf("unwritten ConfigMap: dry-run %v, drift %s, %d fingerprints; want no %s, no drift, 2", r.DryRun, dump(r.Drift), len(r.InSync), conf)
	}
	// Ignore rules other than those checked last time.
	ignoreData := []jsondiff.IgnoreRule{{Paths: []string{"/data/k"}, Selector: &jsondiff.Selector{Kind: "ConfigMap"}}}
	if r := check(DriftOptions{Since: first.InSync, IgnoreRules: ignoreData}); !slices.Contains(r.DryRun, conf) {
		t.Fatalf("new ignore rules for the ConfigMap: dry-run %v, want %s in it", r.DryRun, conf)
	}
	// A desired state other than the one checked last time.
	other := mustObjects(t, manifest)
	other[1].Object["data"] = map[string]any{"k": "new"}
	r, err = m.CheckDrift(ctx, other, DriftOptions{Since: first.InSync})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.DryRun, conf) || len(r.Drift) != 1 {
		t.Fatalf("new desired ConfigMap: dry-run %v, drift %s; want %s dry-run and drifted", r.DryRun, dump(r.Drift), conf)
	}

	depKey := client.ObjectKey{Namespace: ns, Name: "web"}
	writes := []struct {
		name      string
		object    string
		write     func(t *testing.T)
		wantDrift bool
	}{
		{"kubectl scale", dep, func(t *testing.T) {
			testenv.ScaleDeployment(t, m.Client(), depKey, 3)
		}, true},
		{"status-only update", dep, func(t *testing.T) {
			testenv.WriteDeploymentStatus(t, m.Client(), depKey)
		}, false},
		{"change by another manager", conf, func(t *testing.T) {
			cm := &corev1.ConfigMap{}
			if err := m.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "conf"}, cm); err != nil {
				t.Fatal(err)
			}
			cm.Data["k"] = "edited"
			if err := m.Client().Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"delete and recreate, same name and content", conf, func(t *testing.T) {
			cm := &corev1.ConfigMap{}
			cm.Namespace, cm.Name = ns, "conf"
			if err := m.Client().Delete(ctx, cm); err != nil {
				t.Fatal(err)
			}
			again := &corev1.ConfigMap{}
			again.Namespace, again.Name, again.Data = ns, "conf", map[string]string{"k": "v"}
			if err := m.Client().Create(ctx, again, client.FieldOwner("someone-else")); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			// Start from a clean check whose fingerprints are current.
			if _, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			clean := check(DriftOptions{})
			if len(clean.Drift) != 0 {
				t.Fatalf("not clean before the write: %s", dump(clean.Drift))
			}
			w.write(t)
			r := check(DriftOptions{Since: clean.InSync})
			if !slices.Contains(r.DryRun, w.object) {
				t.Fatalf("dry-run %v after the write, want %s in it", r.DryRun, w.object)
			}
			if w.object == dep && slices.Contains(r.DryRun, conf) {
				t.Fatalf("dry-run %v: the unwritten %s too", r.DryRun, conf)
			}
			if got := len(r.Drift) > 0; got != w.wantDrift {
				t.Fatalf("drift %s; want drift: %v", dump(r.Drift), w.wantDrift)
			}
			if !w.wantDrift && len(r.InSync) != 2 {
				t.Fatalf("%d fingerprints after a harmless write, want 2", len(r.InSync))
			}
		})
	}
}

// TestCheckDrift_ownerLabelsList: with the owner labels, the objects of a
// fingerprint are read with one LIST per kind and namespace, with the same
// outcome: unwritten objects are not dry-run, a recreated one (here without
// the labels) is.
func TestCheckDrift_ownerLabelsList(t *testing.T) {
	ctx := testenv.Context(t)
	m, err := newFactory(t).Manager()
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.Namespace(t, m.Client(), "")
	manifest := `
apiVersion: v1
kind: ConfigMap
metadata: {name: one, namespace: ` + ns + `, labels: {owner: me}}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: two, namespace: ` + ns + `, labels: {owner: me}}
data: {k: v}
`
	objs := mustObjects(t, manifest)
	if _, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := map[string]string{"owner": "me"}
	first, err := m.CheckDrift(ctx, objs, DriftOptions{Owner: owner})
	if err != nil || len(first.InSync) != 2 {
		t.Fatalf("first check: %+v, %v", first, err)
	}
	r, err := m.CheckDrift(ctx, objs, DriftOptions{Since: first.InSync, Owner: owner})
	if err != nil || len(r.DryRun) != 0 || len(r.InSync) != 2 {
		t.Fatalf("unwritten objects: %+v, %v; want no dry-run", r, err)
	}
	two := &corev1.ConfigMap{}
	two.Namespace, two.Name = ns, "two"
	if err := m.Client().Delete(ctx, two); err != nil {
		t.Fatal(err)
	}
	again := &corev1.ConfigMap{Data: map[string]string{"k": "v"}}
	again.Namespace, again.Name = ns, "two"
	if err := m.Client().Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	r, err = m.CheckDrift(ctx, objs, DriftOptions{Since: first.InSync, Owner: owner})
	if err != nil || !slices.Equal(r.DryRun, []string{idOf(objs[1])}) || len(r.Drift) != 1 {
		t.Fatalf("recreated without the labels: dry-run %v, drift %s, %v; want %s dry-run and drifted", r.DryRun, dump(r.Drift), err, idOf(objs[1]))
	}
}
