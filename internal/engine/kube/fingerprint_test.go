package kube

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// TestCheckDrift_skipsOnlyUnwrittenObjects: with the fingerprints of the last
// clean check, an object nobody wrote is not dry-run, and every kind of write
// in between (a scale, another manager's change of the spec, a label or an
// annotation, a delete and recreate under the same name) makes it dry-run
// again, so that no drift is missed; a new desired state or new ignore rules
// do too. A write to the status subresource alone does not: the object's
// fingerprint stays, and it is not dry-run.
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
	// while after each change, and the deployment controller its revision
	// annotation once, so the Deployment may or may not be.)
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
	// byAnotherManager changes the Deployment with Update, as another client
	// (kubectl edit, a controller) would.
	byAnotherManager := func(change func(*appsv1.Deployment)) func(t *testing.T) {
		return func(t *testing.T) {
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d := &appsv1.Deployment{}
				if err := m.Client().Get(ctx, depKey, d); err != nil {
					return err
				}
				change(d)
				return m.Client().Update(ctx, d, client.FieldOwner("someone-else"))
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	writes := []struct {
		name       string
		object     string
		write      func(t *testing.T)
		wantDryRun bool
		wantDrift  bool
	}{
		{"kubectl scale", dep, func(t *testing.T) {
			testenv.ScaleDeployment(t, m.Client(), depKey, 3)
		}, true, true},
		{"status-only update", dep, func(t *testing.T) {
			testenv.WriteDeploymentStatus(t, m.Client(), depKey)
		}, false, false},
		{"spec change by another manager", dep, byAnotherManager(func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		}), true, true},
		{"label by another manager", dep, byAnotherManager(func(d *appsv1.Deployment) {
			d.Labels = map[string]string{"team": "b"}
		}), true, false},
		{"annotation by another manager", dep, byAnotherManager(func(d *appsv1.Deployment) {
			d.Annotations["example.com/note"] = "edited"
		}), true, false},
		{"change by another manager", conf, func(t *testing.T) {
			editConfigMap(t, m.Client(), client.ObjectKey{Namespace: ns, Name: "conf"})
		}, true, true},
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
		}, true, false},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			// Start from a clean check whose fingerprints are current, taken
			// once the deployment controller has annotated the Deployment
			// with its revision (its one write of the metadata), so that
			// only this case's write comes between the two checks.
			if _, err := m.ApplyStaged(ctx, mustObjects(t, manifest), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			waitForRevision(t, m.Client(), depKey)
			clean := check(DriftOptions{})
			if len(clean.Drift) != 0 {
				t.Fatalf("not clean before the write: %s", dump(clean.Drift))
			}
			w.write(t)
			r := check(DriftOptions{Since: clean.InSync})
			if got := slices.Contains(r.DryRun, w.object); got != w.wantDryRun {
				t.Fatalf("dry-run %v after the write; want %s dry-run: %v", r.DryRun, w.object, w.wantDryRun)
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
			if !w.wantDryRun {
				// The fingerprint kept still tells a later write apart.
				testenv.ScaleDeployment(t, m.Client(), depKey, 2)
				if r := check(DriftOptions{Since: r.InSync}); !slices.Contains(r.DryRun, dep) || len(r.Drift) != 1 {
					t.Fatalf("scale after the status write: dry-run %v, drift %s; want %s dry-run and drifted", r.DryRun, dump(r.Drift), dep)
				}
			}
		})
	}
}

// editConfigMap sets the ConfigMap's data k to "edited", as another
// manager (kubectl edit) would.
func editConfigMap(t *testing.T, c client.Client, key client.ObjectKey) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(testenv.Context(t), key, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "edited"
	if err := c.Update(testenv.Context(t), cm, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
}

// waitForRevision waits until the deployment controller has written its
// revision annotation on the Deployment at key.
func waitForRevision(t *testing.T, c client.Client, key client.ObjectKey) {
	t.Helper()
	err := wait.PollUntilContextTimeout(testenv.Context(t), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			return false, err
		}
		return d.Annotations["deployment.kubernetes.io/revision"] != "", nil
	})
	if err != nil {
		t.Fatalf("Deployment %s: no revision annotation from the deployment controller: %v", key, err)
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
