package release

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	wjsondiff "github.com/wI2L/jsondiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// upgradeOfChart is, per chart of the test data, the values of an install and
// of the upgrade after it.
var upgradeOfChart = map[string]struct{ install, upgrade map[string]any }{
	"podinfo": {upgrade: map[string]any{"replicaCount": 2, "config": map[string]any{"greeting": "bonjour", "farewell": "bye"}}},
	"withdep": {upgrade: map[string]any{"message": "changed", "podinfo": map[string]any{"config": map[string]any{"greeting": "changed"}}}},
	"crds":    {upgrade: map[string]any{"size": "large"}},
}

// The plan of an upgrade says what the upgrade does: for every chart of the
// test data (and the charts the preview tests write), the planned changes
// equal, object by object, the difference between each object of the release
// before and after the real upgrade.
func TestPlan_previewEqualsTheUpgrade(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(testenv.ChartsDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		name := ent.Name()
		vals, ok := upgradeOfChart[name]
		if !ok {
			t.Errorf("test chart %s has no upgrade in upgradeOfChart", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path, digest := chartArchive(t, filepath.Join(testenv.ChartsDir(), name), "")
			comparePreviewWithUpgrade(t, path, digest, vals.install, vals.upgrade)
		})
	}
	t.Run("emptymeta", func(t *testing.T) {
		t.Parallel()
		path, digest := emptyMetadataChart(t)
		comparePreviewWithUpgrade(t, path, digest, nil, map[string]any{"v": "two"})
	})
	t.Run("preview", func(t *testing.T) {
		t.Parallel()
		path, digest := previewChart(t)
		comparePreviewWithUpgrade(t, path, digest, nil, map[string]any{"greeting": "bonjour", "extra": false, "password": "two"})
	})
}

// comparePreviewWithUpgrade installs the chart with the values install, plans
// the upgrade to the values upgrade, runs it, and compares the plan's changes
// with the difference of the live objects before and after.
func comparePreviewWithUpgrade(t *testing.T, path, digest string, install, upgrade map[string]any) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	spec := &Spec{Name: "cmp", Namespace: ns, Timeout: 2 * time.Minute, ChartPath: path, ChartDigest: digest, Values: install}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Values = upgrade
	p, err := e.Plan(ctx, spec, st)
	if err != nil || p.Action != ActionUpgrade || p.Preview == nil || p.Preview.Unknown != "" {
		t.Fatalf("plan of the upgrade = %+v, %v", p, err)
	}
	planned := changesOf(p)
	if len(planned) == 0 {
		t.Fatal("the upgrade plans no change: the test changes nothing")
	}

	mapper, err := e.kube.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	// The objects of the installed release, and those the plan creates.
	ids := map[string]bool{}
	for _, o := range releaseObjects(t, e, spec) {
		ids[kube.ID(o)] = true
	}
	for id := range planned {
		ids[id] = true
	}
	before := map[string]*unstructured.Unstructured{}
	for id := range ids {
		before[id] = liveByID(ctx, t, c, mapper, id)
	}

	if _, err := e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	for _, o := range releaseObjects(t, e, spec) {
		ids[kube.ID(o)] = true
	}
	done := map[string]kube.Drift{}
	for id := range ids {
		after := liveByID(ctx, t, c, mapper, id)
		if d := serverDiff(t, id, before[id], after); d.Type != "" {
			done[id] = d
		}
	}

	for id := range ids {
		want, got := done[id], planned[id]
		if want.Type != got.Type || !slices.Equal(sortedChanges(want.Changes), sortedChanges(got.Changes)) {
			t.Errorf("%s:\n planned  %s %+v\n upgraded %s %+v", id, got.Type, got.Changes, want.Type, want.Changes)
		}
	}
}

// releaseObjects is the objects of every release of spec in storage.
func releaseObjects(t *testing.T, e *Engine, spec *Spec) []*unstructured.Unstructured {
	t.Helper()
	sess, err := newSession(e.kube, spec.withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	rels, err := sess.storage(nil).History(ReleaseName(spec))
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := e.kube.RESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, rel := range rels {
		objs, err := driftObjects(rel, mapper)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

// liveByID reads the object of inventory ID id, nil when there is none.
func liveByID(ctx context.Context, t *testing.T, c client.Client, mapper meta.RESTMapper, id string) *unstructured.Unstructured {
	t.Helper()
	m, err := object.ParseObjMetadata(id)
	if err != nil {
		t.Fatal(err)
	}
	mapping, err := mapper.RESTMapping(m.GroupKind)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("read %s: %v", id, err)
	}
	return u
}

// serverDiff is what happened to object id between before and after (nil
// when absent): "create", "delete", or "update" with the JSON patch of the
// whole object, leaving out what the API server and controllers write
// (resourceVersion, generation, managedFields, status), as the plan lists
// changes.
func serverDiff(t *testing.T, id string, before, after *unstructured.Unstructured) kube.Drift {
	t.Helper()
	switch {
	case before == nil && after == nil:
		return kube.Drift{}
	case before == nil:
		return kube.Drift{ID: id, Type: "create"}
	case after == nil:
		return kube.Drift{ID: id, Type: "delete"}
	}
	clean := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		for _, f := range [][]string{{"metadata", "resourceVersion"}, {"metadata", "generation"}, {"metadata", "managedFields"}, {"status"}} {
			unstructured.RemoveNestedField(c.Object, f...)
		}
		return c.Object
	}
	patch, err := wjsondiff.Compare(clean(before), clean(after), wjsondiff.Rationalize())
	if err != nil {
		t.Fatal(err)
	}
	if len(patch) == 0 {
		return kube.Drift{}
	}
	if after.GroupVersionKind().Group == "" && after.GetKind() == "Secret" {
		patch = jsondiff.MaskSecretPatchData(patch)
	}
	return kube.Drift{ID: id, Type: "update", Changes: kube.ChangesOf(before, patch)}
}

func sortedChanges(cs []kube.Change) []kube.Change {
	out := slices.Clone(cs)
	slices.SortFunc(out, func(a, b kube.Change) int { return strings.Compare(a.Path+" "+a.Op, b.Path+" "+b.Op) })
	return out
}
