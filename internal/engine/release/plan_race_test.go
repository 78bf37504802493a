package release

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// A create planned over and over while another instance installs a release
// of the same name: whenever each plan looks, before the other's release
// record, between it and its objects, or after, it shows the same objects
// created (with the conflict once the record is there), never unknown
// changes. Apply's final plan of the create that loses the race must agree
// with the plan made before the other apply began.
func TestPlan_createDuringAnotherInstallShowsTheSameObjects(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	name := testenv.UniqueName(t, "raced")
	winner := &Spec{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	loser := &Spec{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, MaxHistory: ptr(5), ChartPath: path, ChartDigest: digest}
	want := fmt.Sprint([]kube.Drift{
		{ID: ns + "_" + name + "__ConfigMap", Type: "create"},
		{ID: ns + "_" + name + "__Service", Type: "create"},
		{ID: ns + "_" + name + "_apps_Deployment", Type: "create"},
	})
	done := make(chan error, 1)
	go func() { _, err := e.Reconcile(ctx, winner, nil); done <- err }()
	for i := 0; ; i++ {
		p, err := e.Plan(ctx, loser, nil)
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		if p.Preview == nil || p.Preview.Unknown != "" || fmt.Sprint(p.Preview.Changes) != want {
			t.Fatalf("plan %d (conflict %v): preview %+v, want %s", i, p.Conflict, p.Preview, want)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if p, err := e.Plan(ctx, loser, nil); err != nil || p.Conflict == nil || fmt.Sprint(p.Preview.Changes) != want {
				t.Fatalf("plan after the install: %+v, %v", p, err)
			}
			return
		default:
		}
	}
}

// A create whose first look found the name free, and that finds another
// instance's release when its rounds look (installed in between): the race is
// lost, with an error naming the winner, and the winner's release is left as
// it was, never upgraded to this create's chart and owner.
func TestReconcile_createLosesToAReleaseThatAppearsAfterItsFirstLook(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	name := testenv.UniqueName(t, "late")
	spec := (&Spec{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, ChartPath: path, ChartDigest: digest}).withDefaults()
	st := cloneStatus(nil)
	r, err := e.prepare(ctx, spec, st)
	if err != nil {
		t.Fatal(err)
	}
	r.creating = true // as Reconcile sets it once its first look found the name free
	other := &Spec{Name: name, Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, ChartPath: path, ChartDigest: digest}
	if _, err := e.Reconcile(ctx, other, nil); err != nil {
		t.Fatal(err)
	}
	err = r.reconcile(ctx)
	var exists *ExistsError
	if !errors.As(err, &exists) || !exists.Raced || exists.Owner.ID != other.Owner {
		t.Fatalf("create after another's install: %v (%+v), want the race lost to %s", err, exists, other.Owner)
	}
	if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, name); !slices.Equal(got, []string{"1:deployed"}) {
		t.Errorf("the other instance's release was changed: %v", got)
	}
}
