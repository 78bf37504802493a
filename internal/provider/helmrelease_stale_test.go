package provider

import (
	"context"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A values_from ConfigMap edited between a saved plan and its apply: the apply
// refuses before any Helm action and the release keeps its revision; a new
// plan shows the new values, and its apply converges. The CLI plans again at
// apply and stops first, when the change is older than that final plan
// ("inconsistent final plan", on config_digest); the engine refuses what
// changed after it (TestReconcile_valuesChangedSincePlanRefused).
func TestAccHelmRelease_valuesChangedSincePlanRefusedBeforeAnyAction(t *testing.T) {
	t.Parallel()
	forEachCLI(t, func(t *testing.T, c cli) {
		ns := uniqueNamespace(t, "hr-stale-"+c.name)
		ctx := context.Background()
		cm := &corev1.ConfigMap{Data: map[string]string{"values.yaml": "config:\n  greeting: one\n"}}
		cm.Namespace, cm.Name = ns, "values"
		if err := testClient(t).Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		w := newWorkspace(t, c, ownedRelease(t.TempDir(), chartCopy(t, "1.0.0"), ns, "podinfo", `
  values_from {
    kind = "ConfigMap"
    name = "values"
  }`))
		w.must("apply", "-auto-approve", "-input=false")
		cm.Data["values.yaml"] = "config:\n  greeting: two\n"
		if err := testClient(t).Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		w.must("plan", "-input=false", "-out=two.plan")
		cm.Data["values.yaml"] = "config:\n  greeting: three\n"
		if err := testClient(t).Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		out, code := w.run("apply", "-input=false", "two.plan")
		if code == 0 || !regexp.MustCompile(`(?s)values_from.*the\s+values\s+changed\s+since\s+the\s+plan.*nothing\s+was\s+applied|`+
			`inconsistent\s+final\s+plan.*config_digest`).MatchString(out) {
			t.Fatalf("apply of the stale plan: exit %d, want a refusal on values_from\n%s", code, out)
		}
		t.Logf("%s refused the stale plan:\n%s", c.name, out)
		if got := releaseRevisions(t, ns, "podinfo"); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("revisions %v: the stale plan was applied", got)
		}
		w.must("apply", "-auto-approve", "-input=false")
		w.planEmpty()
		var live corev1.ConfigMap
		if err := testClient(t).Get(ctx, client.ObjectKey{Namespace: ns, Name: "podinfo"}, &live); err != nil {
			t.Fatal(err)
		}
		if live.Data["greeting"] != "three" {
			t.Fatalf("greeting %q after the new plan's apply, want three", live.Data["greeting"])
		}
		w.destroy()
	})
}
