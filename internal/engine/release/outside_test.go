package release

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func TestDifferingKeys_nestedKeysIgnoringNumberTypes(t *testing.T) {
	a := map[string]any{"replicaCount": 2, "image": map[string]any{"tag": "1", "repo": "x"}, "gone": true, "list": []any{1, 2}, "sub": map[string]any{"a": 1}}
	b := map[string]any{"replicaCount": float64(2), "image": map[string]any{"tag": "2", "repo": "x"}, "added": "y", "list": []any{float64(1), float64(2)}}
	if got, want := differingKeys(a, b), []string{"added", "gone", "image.tag", "sub.a"}; !slices.Equal(got, want) {
		t.Errorf("differingKeys = %v, want %v", got, want)
	}
}

// A `helm upgrade` and a `helm rollback` by another client: refresh brings
// the history of the releases this resource made up to date (its revision 1
// is superseded, without adding the other client's revisions), and the plan
// says what happened, with the keys whose values differ, and upgrades back.
func TestPlan_explainsChangesOutside(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, ChartPath: path, ChartDigest: digest,
		Values: map[string]any{"replicaCount": 1}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc := testenv.Need(t).Cluster.Kubeconfig
	newer, _ := podinfo(t, "1.0.1")
	if err := testenv.HelmUpgrade(kc, ns, "podinfo", newer, map[string]any{"replicaCount": 3, "config": map[string]any{"greeting": "hi"}}); err != nil {
		t.Fatal(err)
	}
	if err := testenv.HelmRollback(kc, ns, "podinfo", 2); err != nil {
		t.Fatal(err)
	}

	obs, err := e.Observe(ctx, spec, st)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Version != 3 || historyOf(obs) != "podinfo.v1:superseded" {
		t.Fatalf("after refresh: version %d, history %q", obs.Version, historyOf(obs))
	}
	p, err := e.Plan(ctx, spec, obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"release podinfo in storage namespace " + ns + " was changed outside stevedore: revision 3 (Rollback to 2, by another client), expected revision 1",
		"its chart is podinfo@1.0.1, not podinfo@1.0.0", "values differ at config.greeting, replicaCount", "apply will upgrade it back"} {
		if !strings.Contains(p.ChangedOutside, want) {
			t.Errorf("ChangedOutside = %q, want it to contain %q", p.ChangedOutside, want)
		}
	}
	if p.Action != ActionUpgrade {
		t.Errorf("action = %s, want upgrade", p.Action)
	}
	if strings.Contains(p.ChangedOutside, "hi") && strings.Contains(p.ChangedOutside, `"hi"`) {
		t.Errorf("a value is in the message: %q", p.ChangedOutside)
	}
}
