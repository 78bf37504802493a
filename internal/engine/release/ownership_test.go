package release

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
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
	spec := &Spec{Name: "theirs", Namespace: ns, Timeout: time.Minute, MaxHistory: 5, ChartPath: path, ChartDigest: digest}

	p, err := e.Plan(ctx, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Conflict == nil || p.Conflict.ReleaseName != "theirs" || p.Conflict.StorageNamespace != ns || p.Conflict.Status != "deployed" || p.Conflict.MadeHere {
		t.Fatalf("plan conflict = %+v", p.Conflict)
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

// A pending-install release whose objects carry another resource's origin
// labels is not an interrupted create of this one: refused.
func TestReconcile_createRefusesAnotherResourcesPendingInstall(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	pendingInstall(t, e, ns, "shared", path, "elsewhere/shared")
	spec := &Spec{Name: "shared", Namespace: ns, Timeout: time.Minute, MaxHistory: 5, ChartPath: path, ChartDigest: digest}
	st, err := e.Reconcile(ctx, spec, nil)
	var exists *ExistsError
	if !errors.As(err, &exists) || st != nil || exists.Status != "pending-install" {
		t.Fatalf("create over another resource's pending install: status %+v, error %v", st, err)
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
	spec := &Spec{Name: "podinfo", Namespace: ns, Timeout: time.Minute, MaxHistory: 5, ChartPath: path,
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
