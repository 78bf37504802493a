package kube

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// countingClient counts the requests that go through it.
type countingClient struct {
	client.Client
	gets, lists, patches, creates atomic.Int64
}

func (c *countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.patches.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.creates.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c *countingClient) reset() {
	c.gets.Store(0)
	c.lists.Store(0)
	c.patches.Store(0)
	c.creates.Store(0)
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Client.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Client.List(ctx, list, opts...)
}

// fakeClock is a clock that a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestCheckDrift_sharedLists: the refreshes of two sets of objects in one
// namespace (two releases, as the release engine's refresh checks them, with
// the label key both carry) read the metadata of their fingerprinted objects
// from one LIST per kind, shared, with a GET only for the object without the
// label; the outcome is the GETs' outcome: nothing dry-run while nothing was
// written, a status-only write skipped, a deleted object found missing. A
// write is seen by a new factory (the next plan's provider process) at once,
// and by the same one once its LIST is older than SharedListTTL.
func TestCheckDrift_sharedLists(t *testing.T) {
	ctx := testenv.Context(t)
	ns := testenv.Namespace(t, mustManager(t, newFactory(t)).Client(), "")
	const label = "example.com/origin"
	manifest := func(origin string, names ...string) string {
		var out string
		for _, n := range names {
			out += "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + n + ", namespace: " + ns + ", labels: {" + label + ": " + origin + "}}\ndata: {k: v}\n"
		}
		return out
	}
	a := manifest("a", "a1", "a2") + `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ` + ns + `, labels: {` + label + `: a}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`
	b := manifest("b", "b1") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bare, namespace: " + ns + "}\ndata: {k: v}\n"
	m := mustManager(t, newFactory(t))
	for _, mf := range []string{a, b} {
		if _, err := m.ApplyStaged(ctx, mustObjects(t, mf), ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	depKey := client.ObjectKey{Namespace: ns, Name: "web"}
	waitForRevision(t, m.Client(), depKey)
	first := map[string]Fingerprints{}
	for name, mf := range map[string]string{"a": a, "b": b} {
		r, err := m.CheckDrift(ctx, mustObjects(t, mf), DriftOptions{})
		if err != nil || len(r.Drift) != 0 {
			t.Fatalf("first check of %s: %+v, %v", name, r, err)
		}
		first[name] = r.InSync
	}

	// refresh checks both sets as a new provider process would, with its
	// own factory and clock, and returns the reports and the reads made.
	type refresh struct {
		m      *Manager
		reads  *countingClient
		clock  *fakeClock
		report map[string]*DriftReport
	}
	newRefresh := func() *refresh {
		m := mustManager(t, newFactory(t))
		c := &countingClient{Client: m.client}
		m.client = c
		clock := &fakeClock{now: time.Now()}
		m.shared.now = clock.Now
		return &refresh{m: m, reads: c, clock: clock}
	}
	check := func(r *refresh) {
		t.Helper()
		r.reads.gets.Store(0)
		r.reads.lists.Store(0)
		r.report = map[string]*DriftReport{}
		for name, mf := range map[string]string{"a": a, "b": b} {
			rep, err := r.m.CheckDrift(ctx, mustObjects(t, mf), DriftOptions{Since: first[name], SharedLabel: label})
			if err != nil {
				t.Fatal(err)
			}
			r.report[name] = rep
		}
	}

	r := newRefresh()
	check(r)
	// One LIST per kind (ConfigMap, Deployment) for both sets, and a GET
	// for the ConfigMap without the label, which the LIST does not select.
	if l, g := r.reads.lists.Load(), r.reads.gets.Load(); l != 2 || g != 1 {
		t.Fatalf("reads of two unchanged sets: %d LISTs, %d GETs; want 2 and 1", l, g)
	}
	for name, rep := range r.report {
		if len(rep.DryRun) != 0 || len(rep.Drift) != 0 || len(rep.InSync) != len(first[name]) {
			t.Fatalf("unchanged set %s: dry-run %v, drift %s, %d fingerprints", name, rep.DryRun, dump(rep.Drift), len(rep.InSync))
		}
	}

	// A status-only write: still not dry-run, read from the LIST.
	testenv.WriteDeploymentStatus(t, m.Client(), depKey)
	afterStatus := newRefresh()
	check(afterStatus)
	if ra := afterStatus.report["a"]; len(ra.DryRun) != 0 || len(ra.Drift) != 0 {
		t.Fatalf("set a after a status write to its Deployment: dry-run %v, drift %s; want none", ra.DryRun, dump(ra.Drift))
	}

	// Another manager's edit, and a delete: a new process sees both.
	editConfigMap(t, m.Client(), client.ObjectKey{Namespace: ns, Name: "a1"})
	gone := &corev1.ConfigMap{}
	gone.Namespace, gone.Name = ns, "b1"
	if err := m.Client().Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	ida1, idb1 := ns+"_a1__ConfigMap", ns+"_b1__ConfigMap"
	wantSeen := func(r *refresh) {
		t.Helper()
		if ra := r.report["a"]; !slices.Equal(ra.DryRun, []string{ida1}) || len(ra.Drift) != 1 || ra.Drift[0].ID != ida1 {
			t.Fatalf("set a after the edit of a1: dry-run %v, drift %s; want a1 alone (the Deployment's status write is no drift)", ra.DryRun, dump(ra.Drift))
		}
		if rb := r.report["b"]; !slices.Equal(rb.DryRun, []string{idb1}) || len(rb.Drift) != 1 || rb.Drift[0].Type != "create" {
			t.Fatalf("set b after the delete of b1: dry-run %v, drift %s; want b1 missing", rb.DryRun, dump(rb.Drift))
		}
	}
	fresh := newRefresh()
	check(fresh)
	wantSeen(fresh)

	// The process whose LISTs were taken before the writes reads them from
	// the LISTs until they are older than SharedListTTL, then lists again.
	r.clock.add(SharedListTTL + time.Second)
	check(r)
	if l := r.reads.lists.Load(); l != 2 {
		t.Fatalf("%d LISTs after SharedListTTL, want 2 new ones", l)
	}
	wantSeen(r)
}

func mustManager(t *testing.T, f *Factory) *Manager {
	t.Helper()
	m, err := f.Manager()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
