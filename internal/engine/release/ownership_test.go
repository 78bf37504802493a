package release

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A create over a release that this resource did not make (a `helm install`,
// another workspace's release) is refused before anything is done: the plan
// says so, apply returns no status (nothing to save), and the other release
// is untouched.
func TestReconcile_createRefusesAReleaseItDidNotMake(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	kubeconfig := testenv.Need(t).Cluster.Kubeconfig
	if err := testenv.HelmInstall(kubeconfig, ns, "theirs", path, map[string]any{"replicaCount": 2}); err != nil {
		t.Fatal(err)
	}
	spec := &Spec{Name: "theirs", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}

	p, err := e.Plan(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Conflict == nil || p.Conflict.ReleaseName != "theirs" || p.Conflict.StorageNamespace != ns || p.Conflict.Status != "deployed" || p.Conflict.Owner.Kind != kube.OwnedByHelm {
		t.Fatalf("plan conflict = %+v", p.Conflict)
	}
	// The plan still shows what the install would create, as a plan made
	// before the release appeared did (apply's final plan must agree).
	wantNew := []kube.Drift{{ID: ns + "_theirs__ConfigMap", Type: "create"}, {ID: ns + "_theirs__Service", Type: "create"}, {ID: ns + "_theirs_apps_Deployment", Type: "create"}}
	if p.Preview == nil || p.Preview.Unknown != "" || fmt.Sprint(p.Preview.Changes) != fmt.Sprint(wantNew) {
		t.Fatalf("preview of a conflicting create = %+v, want %v", p.Preview, wantNew)
	}
	st, err := e.Reconcile(ctx, spec, nil)
	var exists *ExistsError
	if !errors.As(err, &exists) || st != nil {
		t.Fatalf("create over another release: status %+v, error %v", st, err)
	}
	if got, _ := testenv.ReleaseRevisions(kubeconfig, ns, "theirs"); !slices.Equal(got, []string{"1:deployed"}) {
		t.Errorf("the other release was changed: %v", got)
	}

	// An update (state says this resource made the release) is not a
	// create: no conflict is reported.
	if p, err := e.Plan(ctx, spec, &Status{ReleaseName: "theirs", StorageNamespace: ns}); err != nil || p.Conflict != nil {
		t.Fatalf("plan with state = %+v, %v", p, err)
	}
}

// A pending-install release is this create's own only when it carries the
// instance's owner ID. One made by another instance (another configuration
// that reuses this resource's name and namespace: its objects carry the same
// origin labels), or by an instance that recorded no owner, or by a killed
// create of this resource (which nothing can tell from another's), is
// refused, naming its owner, and left as it was.
func TestReconcile_createRefusesAnotherInstancesPendingInstall(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	for _, owner := range []string{kube.NewOwnerID(), ""} {
		name := testenv.UniqueName(t, "shared")
		pendingInstall(t, e, ns, name, path, ns+"/"+name, owner)
		spec := &Spec{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
		p, err := e.Plan(ctx, spec, nil)
		if err != nil || p.Conflict == nil || p.Preview == nil || p.Preview.Unknown != "" || len(p.Preview.Changes) != 3 {
			t.Fatalf("owner %q: plan of a create over another instance's pending install: %+v (preview %+v), %v", owner, p, p.Preview, err)
		}
		st, err := e.Reconcile(ctx, spec, nil)
		var exists *ExistsError
		if !errors.As(err, &exists) || st != nil || exists.Status != "pending-install" || exists.Owner.ID != owner ||
			exists.Owner.Kind != kube.OwnedByRelease || exists.ImportID != ns+"/"+name {
			t.Fatalf("owner %q: create over another instance's pending install: status %+v, error %v (%+v)", owner, st, err, exists)
		}
		if !strings.Contains(err.Error(), "it is being installed right now, or an apply was killed while installing it") {
			t.Errorf("error does not say the release may be installing now: %v", err)
		}
		if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, name); !slices.Equal(got, []string{"1:pending-install"}) {
			t.Errorf("owner %q: the other release was changed: %v", owner, got)
		}
	}
}

// Two creates of one release name by two instances at once: the API server
// lets exactly one create the release record, and the other fails before it
// writes anything, naming the winner's owner ID, with no status to save (so
// its destroy cannot uninstall the winner's release). Repeated, with a fresh
// name each time.
func TestReconcile_concurrentCreatesExactlyOneWins(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	kubeconfig := testenv.Need(t).Cluster.Kubeconfig
	for round := range 5 {
		name := testenv.UniqueName(t, "race")
		specs := []*Spec{
			{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest},
			{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest},
		}
		sts := make([]*Status, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sts[i], errs[i] = e.Reconcile(ctx, specs[i], nil)
			}()
		}
		wg.Wait()
		won := -1
		for i := range specs {
			if errs[i] == nil {
				if won >= 0 {
					t.Fatalf("round %d: both creates succeeded", round)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no create succeeded: %v; %v", round, errs[0], errs[1])
		}
		lost := 1 - won
		var exists *ExistsError
		if !errors.As(errs[lost], &exists) || sts[lost] != nil || exists.Owner.ID != specs[won].Owner {
			t.Fatalf("round %d: the loser's error does not name the winner %s: status %+v, error %v", round, specs[won].Owner, sts[lost], errs[lost])
		}
		if got, _ := testenv.ReleaseRevisions(kubeconfig, ns, name); !slices.Equal(got, []string{"1:deployed"}) {
			t.Fatalf("round %d: revisions %v, want the winner's one", round, got)
		}
		// The loser's destroy (had it saved anything) would not uninstall
		// the winner's release.
		if _, err := e.Uninstall(ctx, specs[lost]); err == nil {
			t.Fatalf("round %d: the loser's uninstall went ahead over the winner's release", round)
		}
		if _, err := e.Uninstall(ctx, specs[won]); err != nil {
			t.Fatal(err)
		}
	}
}

// A chart.digest that is not the archive's is an error on chart.digest, at
// plan and at apply, before anything is done: state would record a digest
// that was never installed.
func TestReconcile_wrongChartDigestIsRefused(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, _ := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path,
		ChartDigest: "sha256:0000000000000000000000000000000000000000000000000000000000000000"}
	var fe *fielderr.Error
	if _, err := e.Plan(ctx, spec, nil); !errors.As(err, &fe) || fe.Path != "chart.digest" {
		t.Fatalf("plan: want an error on chart.digest, got %v", err)
	}
	if _, err := e.Reconcile(ctx, spec, nil); !errors.As(err, &fe) || fe.Path != "chart.digest" {
		t.Fatalf("apply: want an error on chart.digest, got %v", err)
	}
	if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo"); len(got) != 0 {
		t.Errorf("a release was made: %v", got)
	}
}

// Values that compose, at apply, to another digest than the plan showed (a
// values_from object changed since) are refused on values_from before any
// action: no revision is written, and nothing new is returned to save.
func TestReconcile_valuesChangedSincePlanRefused(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest,
		Values: map[string]any{"replicaCount": 2}}
	p, err := e.Plan(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.PlannedConfigDigest = p.ConfigDigest
	spec.Values = map[string]any{"replicaCount": 3}
	st, err := e.Reconcile(ctx, spec, nil)
	var stale *StaleValuesError
	if !errors.As(err, &stale) || fielderr.PathOf(err) != "values_from" || st != nil || stale.Planned != p.ConfigDigest {
		t.Fatalf("apply with changed values: status %+v, error %v", st, err)
	}
	if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo"); len(got) != 0 {
		t.Errorf("a release was made: %v", got)
	}
	spec.Values = map[string]any{"replicaCount": 2}
	if _, err := e.Reconcile(ctx, spec, nil); err != nil {
		t.Fatalf("apply with the planned values: %v", err)
	}
}
