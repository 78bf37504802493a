package release

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv/objdiff"
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
		for _, ssa := range []bool{true, false} {
			t.Run(name+"/"+methodName(ssa), func(t *testing.T) {
				t.Parallel()
				path, digest := chartArchive(t, filepath.Join(testenv.ChartsDir(), name), "")
				comparePreviewWithUpgrade(t, path, digest, ssa, vals.install, vals.upgrade)
			})
		}
	}
	for _, ssa := range []bool{true, false} {
		t.Run("emptymeta/"+methodName(ssa), func(t *testing.T) {
			t.Parallel()
			path, digest := emptyMetadataChart(t)
			comparePreviewWithUpgrade(t, path, digest, ssa, nil, map[string]any{"v": "two"})
		})
		t.Run("preview/"+methodName(ssa), func(t *testing.T) {
			t.Parallel()
			path, digest := previewChart(t)
			comparePreviewWithUpgrade(t, path, digest, ssa, nil, map[string]any{"greeting": "bonjour", "extra": false, "password": "two"})
		})
	}
}

func methodName(ssa bool) string {
	if ssa {
		return ApplyMethodSSA
	}
	return ApplyMethodCSA
}

// comparePreviewWithUpgrade installs the chart with the values install
// (server-side apply when ssa, else client-side; the upgrade keeps it),
// plans the upgrade to the values upgrade, runs it, and compares the plan's
// changes with the difference of the live objects before and after.
func comparePreviewWithUpgrade(t *testing.T, path, digest string, ssa bool, install, upgrade map[string]any) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	spec := &Spec{Name: "cmp", Namespace: ns, Timeout: 2 * time.Minute, ChartPath: path, ChartDigest: digest, Values: install,
		Install: Install{ServerSideApply: ptr(ssa)}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Values = upgrade
	p, err := e.Plan(ctx, spec, st)
	if err != nil || p.Action != ActionUpgrade || p.Preview == nil || p.Preview.Unknown != "" || p.ApplyMethod != methodName(ssa) {
		t.Fatalf("plan of the upgrade = %+v, %v", p, err)
	}
	planned := changesOf(p)
	if len(planned) == 0 {
		t.Fatal("the upgrade plans no change: the test changes nothing")
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
		before[id] = objdiff.Live(ctx, t, c, id)
	}

	if _, err := e.Reconcile(ctx, spec, st); err != nil {
		t.Fatal(err)
	}
	for _, o := range releaseObjects(t, e, spec) {
		ids[kube.ID(o)] = true
	}
	done := map[string]kube.Drift{}
	for id := range ids {
		after := objdiff.Live(ctx, t, c, id)
		if d := objdiff.Diff(t, id, before[id], after); d.Type != "" {
			done[id] = d
		}
	}

	for id := range ids {
		want, got := done[id], planned[id]
		if want.Type != got.Type || !slices.Equal(objdiff.Sorted(want.Changes), objdiff.Sorted(got.Changes)) {
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
