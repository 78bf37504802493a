package release

import (
	"fmt"
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
