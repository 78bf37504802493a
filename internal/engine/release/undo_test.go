package release

import (
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An upgrade that fails after changing the cluster (a nodeSelector no node
// has: the new pods stay Pending and Helm's wait fails) with no retries left
// stalls: the plan says apply will fail, and apply fails with RetriesExceeded
// and a Stalled condition, doing nothing. Reverting the values then brings
// the Deployment back to the reverted manifest: Helm alone would merge from
// the last deployed release, which never had the nodeSelector, and leave it.
func TestReconcile_revertedValuesUndoAFailedUpgrade(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: 20 * time.Second, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}

	spec.Values = map[string]any{"nodeSelector": map[string]any{"stevedore.dev/no-such-node": "true"}}
	st, err = e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), "upgrade failed") || !strings.Contains(err.Error(), ReasonRetriesExceeded) {
		t.Fatalf("want a failed upgrade with retries exceeded, got %v", err)
	}
	if st.Status != "failed" || st.Version != 2 || st.UpgradeFailures != 1 {
		t.Fatalf("after the failed upgrade: %q v%d, %d upgrade failures", st.Status, st.Version, st.UpgradeFailures)
	}
	wantCondition(t, st, CondStalled, "True", ReasonRetriesExceeded)
	if sel := nodeSelector(t, c, ns); sel == nil {
		t.Fatal("the failed upgrade did not reach the Deployment: the test proves nothing")
	}

	// The same configuration: the plan says apply will fail, and it does,
	// without a Helm action.
	p, err := e.Plan(ctx, spec, st)
	if err != nil || p.Stalled == "" || !strings.Contains(p.Stalled, ReasonRetriesExceeded) || p.Action != ActionNone {
		t.Fatalf("plan when stalled = %+v, %v", p, err)
	}
	st, err = e.Reconcile(ctx, spec, st)
	if err == nil || !strings.Contains(err.Error(), ReasonRetriesExceeded) || st.Version != 2 {
		t.Fatalf("apply when stalled: v%d, %v", st.Version, err)
	}
	wantCondition(t, st, CondStalled, "True", ReasonRetriesExceeded)
	if !strings.Contains(condition(st, CondStalled).Message, "Failed to upgrade after 1 attempt(s)") {
		t.Errorf("Stalled message: %q", condition(st, CondStalled).Message)
	}

	// Reverted values: an upgrade that takes the nodeSelector off.
	spec.Values = nil
	st, err = e.Reconcile(ctx, spec, st)
	if err != nil {
		t.Fatalf("upgrade with the reverted values: %v (history %s)", err, historyOf(st))
	}
	if st.Status != "deployed" || st.Version != 3 {
		t.Fatalf("after the revert: %q v%d", st.Status, st.Version)
	}
	if sel := nodeSelector(t, c, ns); sel != nil {
		t.Errorf("the failed upgrade's nodeSelector is still on the Deployment: %v", sel)
	}
	if cond := condition(st, CondStalled); cond.Type != "" {
		t.Errorf("Stalled left after the release converged: %+v", cond)
	}
}

// nodeSelector is the pod template's nodeSelector of Deployment ns/podinfo.
func nodeSelector(t *testing.T, c client.Client, ns string) map[string]any {
	t.Helper()
	d, ok := get(t, c, "apps/v1", "Deployment", ns, "podinfo")
	if !ok {
		t.Fatalf("Deployment %s/podinfo is gone", ns)
	}
	sel, _, err := unstructured.NestedMap(d.Object, "spec", "template", "spec", "nodeSelector")
	if err != nil {
		t.Fatal(err)
	}
	return sel
}
