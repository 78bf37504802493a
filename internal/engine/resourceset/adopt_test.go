package resourceset

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

func adoptedFlags(entries []kube.Entry) map[string]bool {
	out := map[string]bool{}
	for _, en := range entries {
		out[en.ID] = en.Adopted
	}
	return out
}

// createConfigMap creates a ConfigMap as someone other than the set would,
// and deletes it when the test ends.
func createConfigMap(t *testing.T, c client.Client, ns, name string, data, labels map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{Data: data}
	cm.Namespace, cm.Name, cm.Labels = ns, name, labels
	if err := c.Create(testenv.Context(t), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })
}

// uniqueName is prefix with a random suffix, for objects that outlive a test
// (a Namespace takes a while to go).
func uniqueName(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// ownerOf returns the owner labels of a live object, "" when it has none.
func ownerOf(t *testing.T, c client.Client, apiVersion, kind, ns, name string) string {
	t.Helper()
	u, ok := get(t, c, apiVersion, kind, ns, name)
	if !ok {
		t.Fatalf("%s %s/%s is gone", kind, ns, name)
	}
	l := u.GetLabels()
	if l[NameLabel] == "" && l[NamespaceLabel] == "" {
		return ""
	}
	return l[NamespaceLabel] + "/" + l[NameLabel]
}

// An object that existed before the set is planned and applied as adopted,
// one the set creates as not; when the adopted one leaves the set, prune only
// takes the owner labels back and the data (its own and what the set applied)
// stays.
func TestEngine_pruneAdoptedRemovesOnlyOwnerLabels(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	createConfigMap(t, c, "default", "adopt-prune", map[string]string{"theirs": "keep"}, nil)
	both := `
apiVersion: v1
kind: ConfigMap
metadata: {name: adopt-prune}
data: {ours: set}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: adopt-made}
data: {ours: set}
`
	spec := &Spec{Name: "adopter", Namespace: "default", ResourcesTemplate: both}
	const adoptedID, madeID = "default_adopt-prune__ConfigMap", "default_adopt-made__ConfigMap"

	plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{adoptedID: true, madeID: false}
	if got := adoptedFlags(plan.Inventory); !maps.Equal(got, want) || len(plan.Undecided) != 0 {
		t.Fatalf("planned adoption %v, undecided %v; want %v", got, plan.Undecided, want)
	}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{Planned: Adoptions(adoptedFlags(plan.Inventory))})
	if err != nil {
		t.Fatal(err)
	}
	if got := adoptedFlags(res.Inventory); !maps.Equal(got, want) {
		t.Fatalf("applied adoption %v, want %v", got, want)
	}
	if o := ownerOf(t, c, "v1", "ConfigMap", "default", "adopt-prune"); o != "default/adopter" {
		t.Fatalf("owner after apply %q", o)
	}

	// The plan of the next apply knows the flags from the inventory alone.
	spec.ResourcesTemplate = strings.SplitN(both, "---", 2)[1]
	plan, err = e.Plan(ctx, spec, res.Inventory, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := adoptedFlags(plan.Inventory); !maps.Equal(got, map[string]bool{madeID: false}) {
		t.Fatalf("planned inventory after removing the adopted object: %v", got)
	}
	res, err = e.Apply(ctx, spec, res.Inventory, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := entryIDs(res.Inventory); got != madeID {
		t.Fatalf("inventory after prune %s", got)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "adopt-prune"}, &cm); err != nil {
		t.Fatalf("prune deleted the adopted ConfigMap: %v", err)
	}
	if _, ok := cm.Labels[NameLabel]; ok || cm.Labels[NamespaceLabel] != "" {
		t.Fatalf("owner labels left on the pruned adopted object: %v", cm.Labels)
	}
	if !maps.Equal(cm.Data, map[string]string{"theirs": "keep", "ours": "set"}) {
		t.Fatalf("data of the pruned adopted object: %v", cm.Data)
	}

	if left, err := e.Delete(ctx, spec, res.Inventory); err != nil || len(left) != 0 {
		t.Fatalf("delete: left %v, err %v", left, err)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", "default", "adopt-made"); ok {
		t.Fatal("the ConfigMap the set created survived delete")
	}
}

// Delete, as a failed create's replacement runs it, keeps an adopted
// Namespace and what it holds, and deletes what the set created in it.
func TestEngine_deleteKeepsAdoptedObjects(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := &corev1.Namespace{}
	ns.Name = uniqueName("adopt-delete")
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	createConfigMap(t, c, ns.Name, "precious", map[string]string{"keep": "me"}, nil)
	spec := &Spec{Name: "deleter", Namespace: "default", ResourcesTemplate: `
apiVersion: v1
kind: Namespace
metadata: {name: ` + ns.Name + `}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: made, namespace: ` + ns.Name + `}
`}
	res, err := e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"_" + ns.Name + "__Namespace": true, ns.Name + "_made__ConfigMap": false}
	if got := adoptedFlags(res.Inventory); !maps.Equal(got, want) {
		t.Fatalf("adoption %v, want %v", got, want)
	}
	left, err := e.Delete(ctx, spec, res.Inventory)
	if err != nil || len(left) != 0 {
		t.Fatalf("delete: left %v, err %v", left, err)
	}
	if o := ownerOf(t, c, "v1", "Namespace", "", ns.Name); o != "" {
		t.Fatalf("the adopted Namespace keeps the owner labels of %s", o)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns.Name, "precious"); !ok {
		t.Fatal("the ConfigMap in the adopted Namespace is gone")
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns.Name, "made"); ok {
		t.Fatal("the ConfigMap the set created survived delete")
	}
}

// An object created or deleted between the plan and the apply fails the apply
// before anything is applied, naming it; without plan information the apply
// decides alone.
func TestEngine_applyRefusesStalePlan(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	spec := &Spec{Name: "stale", Namespace: "default", ResourcesTemplate: `
apiVersion: v1
kind: ConfigMap
metadata: {name: stale-appears}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: stale-other}
`}
	plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	planned := Adoptions(adoptedFlags(plan.Inventory))
	if planned["default_stale-appears__ConfigMap"] {
		t.Fatal("planned as adopted before it exists")
	}
	createConfigMap(t, c, "default", "stale-appears", map[string]string{"someone": "else"}, nil)

	res, err := e.Apply(ctx, spec, nil, ApplyOptions{Planned: planned})
	var se *StalePlanError
	if !errors.As(err, &se) || !se.Exists || !strings.Contains(err.Error(), "ConfigMap/default/stale-appears exists now") ||
		!strings.Contains(err.Error(), "plan again") {
		t.Fatalf("want a stale plan error naming the object, got %v", err)
	}
	if len(res.Inventory) != 0 || res.Conditions[0].Reason != ReasonReconciliationFailed {
		t.Fatalf("inventory %v, conditions %+v", res.Inventory, res.Conditions)
	}
	if o := ownerOf(t, c, "v1", "ConfigMap", "default", "stale-appears"); o != "" {
		t.Fatalf("the object was taken over by %s", o)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", "default", "stale-other"); ok {
		t.Fatal("an object was applied before the apply failed")
	}

	// Planned as adopted, deleted before the apply.
	plan, err = e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	planned = Adoptions(adoptedFlags(plan.Inventory))
	if !planned["default_stale-appears__ConfigMap"] {
		t.Fatal("an existing object must plan as adopted")
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = "default", "stale-appears"
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(ctx, spec, nil, ApplyOptions{Planned: planned})
	if !errors.As(err, &se) || se.Exists || !strings.Contains(err.Error(), "ConfigMap/default/stale-appears no longer exists") {
		t.Fatalf("want a stale plan error for the deleted object, got %v", err)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", "default", "stale-appears"); ok {
		t.Fatal("the deleted object was created by an apply whose plan was stale")
	}

	// No plan information (inputs were unknown at plan): the cluster decides.
	createConfigMap(t, c, "default", "stale-appears", nil, nil)
	res, err = e.Apply(ctx, spec, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"default_stale-appears__ConfigMap": true, "default_stale-other__ConfigMap": false}
	if got := adoptedFlags(res.Inventory); !maps.Equal(got, want) {
		t.Fatalf("adoption %v, want %v", got, want)
	}
	if _, err := e.Delete(ctx, spec, res.Inventory); err != nil {
		t.Fatal(err)
	}
}

// An object that carries another set's owner labels is refused at plan and at
// apply, naming the owner and the attribute that renders it; the owner's
// object is left as it was.
func TestEngine_refusesObjectOwnedByAnotherSet(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	a := &Spec{Name: "owner-a", Namespace: "default", Owner: kube.NewOwnerID(),
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: contested}\ndata: {by: a}\n"}
	resA, err := e.Apply(ctx, a, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &Spec{Name: "owner-b", Namespace: "default",
		Resources:         []map[string]any{mustMap(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: contested}\ndata: {by: b}\n")},
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: uncontested}\n",
	}
	_, err = e.Plan(ctx, b, nil, PlanOptions{})
	var oe *OwnershipError
	if !errors.As(err, &oe) || oe.Owner.Name != "owner-a" || fielderr.PathOf(err) != "resources" ||
		err.Error() != "resourceset default/owner-b: resources: ConfigMap/default/contested is owned by stevedore_resourceset default/owner-a (owner "+a.Owner+"); remove it from one of the sets" {
		t.Fatalf("plan: want an ownership error naming owner-a on resources, got %v (%+v)", err, oe)
	}
	// In resources_template instead.
	b2 := &Spec{Name: "owner-b", Namespace: "default", ResourcesTemplate: a.ResourcesTemplate}
	if _, err := e.Plan(ctx, b2, nil, PlanOptions{}); !errors.As(err, &oe) || fielderr.PathOf(err) != "resources_template" {
		t.Fatalf("plan: want an ownership error on resources_template, got %v (%+v)", err, oe)
	}

	res, err := e.Apply(ctx, b, nil, ApplyOptions{})
	if !errors.As(err, &oe) || oe.Owner.Name != "owner-a" {
		t.Fatalf("apply: want an ownership error naming owner-a, got %v", err)
	}
	if len(res.Inventory) != 0 {
		t.Fatalf("inventory after the refused apply %v", res.Inventory)
	}
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "contested"}, &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["by"] != "a" || cm.Labels[NameLabel] != "owner-a" {
		t.Fatalf("owner-a's object changed: data %v labels %v", cm.Data, cm.Labels)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", "default", "uncontested"); ok {
		t.Fatal("the refused set applied an object")
	}
	if _, err := e.Delete(ctx, a, resA.Inventory); err != nil {
		t.Fatal(err)
	}
}

// An object new to the inventory that carries this set's name labels but not
// its instance's owner ID (another configuration that reuses the name, or a
// killed create of this set, which nothing tells apart; here one made before
// owners were recorded) plans undecided with a warning at the plan of a
// create, and the apply, with an owner ID, refuses it naming the import ID. A
// set whose state recorded no owner (made before owners were recorded) still
// owns it, as it did.
func TestEngine_ownLabelledObjectUndecidedAtPlan(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	createConfigMap(t, c, "default", "leftover", nil, map[string]string{NameLabel: "leftover", NamespaceLabel: "default"})
	spec := &Spec{Name: "leftover", Namespace: "default", Creating: true,
		ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leftover}\n"}
	const id = "default_leftover__ConfigMap"
	plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Undecided[id] || len(plan.Warnings) != 1 || plan.Warnings[0].Summary != "Objects of another set of this name" ||
		!strings.Contains(plan.Warnings[0].Message, `import the set with the ID "default/leftover"`) {
		t.Fatalf("want %s undecided with a warning, got %v %+v", id, plan.Undecided, plan.Warnings)
	}
	// The prior inventory decides without asking the cluster.
	legacy := *spec
	legacy.Creating = false
	plan, err = e.Plan(ctx, &legacy, []kube.Entry{{ID: id, V: "v1"}}, PlanOptions{})
	if err != nil || len(plan.Undecided) != 0 || plan.Inventory[0].Adopted {
		t.Fatalf("with the entry in the prior inventory: %+v, %v", plan, err)
	}
	created := *spec
	created.Creating, created.Owner = false, kube.NewOwnerID()
	var oe *OwnershipError
	if _, err := e.Apply(ctx, &created, nil, ApplyOptions{}); !errors.As(err, &oe) || !oe.Namesake || oe.ImportID != "default/leftover" {
		t.Fatalf("apply of a new instance: want a namesake ownership error, got %v", err)
	}
	res, err := e.Apply(ctx, &legacy, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Inventory[0].Adopted {
		t.Fatal("an existing object must be applied as adopted")
	}
	if _, err := e.Delete(ctx, &legacy, res.Inventory); err != nil {
		t.Fatal(err)
	}
	if o := ownerOf(t, c, "v1", "ConfigMap", "default", "leftover"); o != "" {
		t.Fatalf("owner labels left: %s", o)
	}
}

// Two configurations that reuse a set's name and namespace are two owners: the
// second's plan warns and its apply refuses the first's object, changing
// nothing; the first's destroy then deletes the object it created.
func TestEngine_sameNameInTwoConfigurations(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "own")
	tmpl := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-shared}\ndata: {v: " + v + "}\n"
	}
	first := &Spec{Name: "same", Namespace: ns, Owner: kube.NewOwnerID(), ResourcesTemplate: tmpl("first")}
	res1, err := e.Apply(ctx, first, nil, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	second := &Spec{Name: "same", Namespace: ns, Creating: true, ResourcesTemplate: tmpl("second")}
	plan, err := e.Plan(ctx, second, nil, PlanOptions{})
	if err != nil || len(plan.Undecided) != 1 || len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0].Message, first.Owner) {
		t.Fatalf("second plan: %+v, %v", plan, err)
	}
	second.Creating, second.Owner = false, kube.NewOwnerID()
	var oe *OwnershipError
	if _, err := e.Apply(ctx, second, nil, ApplyOptions{Planned: Adoptions{}}); !errors.As(err, &oe) || !oe.Namesake || oe.Owner.ID != first.Owner {
		t.Fatalf("second apply: want a namesake ownership error naming %s, got %v", first.Owner, err)
	}
	if u, _ := get(t, c, "v1", "ConfigMap", ns, "cm-shared"); u.Object["data"].(map[string]any)["v"] != "first" {
		t.Fatalf("the first set's object was overwritten: %v", u.Object["data"])
	}
	if _, err := e.Delete(ctx, first, res1.Inventory); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, c, "v1", "ConfigMap", ns, "cm-shared"); ok {
		t.Fatal("the first set's destroy left its object")
	}
}

// An object of a Helm release, of Flux or of flux-operator is refused at plan,
// naming the owner and the take_over_from value that would allow it; with
// that value the set takes it over (a warning at plan), owns it (not adopted)
// and deletes it on destroy. Another stevedore release's object is never
// taken over.
func TestEngine_foreignOwnersRefusedUnlessTakenOver(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "own")
	for _, tc := range []struct {
		name        string
		labels, ann map[string]string
		owner       string
		takeOver    string
	}{
		{"helm", map[string]string{"app.kubernetes.io/managed-by": "Helm"}, map[string]string{"meta.helm.sh/release-name": "web", "meta.helm.sh/release-namespace": ns},
			"Helm release " + ns + "/web", kube.TakeOverHelm},
		{"flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil,
			"Flux Kustomization flux-system/apps", kube.TakeOverFlux},
		{"flux-operator", map[string]string{"resourceset.fluxcd.controlplane.io/name": "rs", "resourceset.fluxcd.controlplane.io/namespace": "flux-system"}, nil,
			"flux-operator ResourceSet flux-system/rs", kube.TakeOverFluxOperator},
		{"release", map[string]string{kube.ReleaseNameLabel: "podinfo", kube.ReleaseNamespaceLabel: ns}, nil,
			"stevedore_helmrelease " + ns + "/podinfo", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "foreign-" + tc.name
			cm := &corev1.ConfigMap{Data: map[string]string{"by": "them"}}
			cm.Namespace, cm.Name, cm.Labels, cm.Annotations = ns, name, tc.labels, tc.ann
			if err := c.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			spec := &Spec{Name: "taker-" + tc.name, Namespace: ns, Owner: kube.NewOwnerID(),
				ResourcesTemplate: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {by: us}\n"}
			var oe *OwnershipError
			_, err := e.Plan(ctx, spec, nil, PlanOptions{})
			if !errors.As(err, &oe) || oe.Owner.String() != tc.owner || fielderr.PathOf(err) != "resources_template" {
				t.Fatalf("plan: want an ownership error naming %s, got %v", tc.owner, err)
			}
			if tc.takeOver == "" {
				spec.TakeOverFrom = append(spec.TakeOverFrom, kube.TakeOverNames...)
				if _, err := e.Apply(ctx, spec, nil, ApplyOptions{}); !errors.As(err, &oe) {
					t.Fatalf("apply with every take_over_from: want an ownership error, got %v", err)
				}
				return
			}
			if !strings.Contains(err.Error(), `add "`+tc.takeOver+`" to take_over_from`) {
				t.Errorf("the error does not say how to take it over: %v", err)
			}
			spec.TakeOverFrom = []string{tc.takeOver}
			plan, err := e.Plan(ctx, spec, nil, PlanOptions{})
			if err != nil || len(plan.Warnings) != 1 || plan.Warnings[0].Summary != "Objects taken over" || plan.Inventory[0].Adopted {
				t.Fatalf("plan with take_over_from: %+v, %v", plan, err)
			}
			res, err := e.Apply(ctx, spec, nil, ApplyOptions{Planned: adoptionsOf(plan.Inventory)})
			if err != nil || res.Inventory[0].Adopted {
				t.Fatalf("apply with take_over_from: %+v, %v", res, err)
			}
			if u, _ := get(t, c, "v1", "ConfigMap", ns, name); u.Object["data"].(map[string]any)["by"] != "us" {
				t.Fatalf("not taken over: %v", u.Object["data"])
			}
			if _, err := e.Delete(ctx, spec, res.Inventory); err != nil {
				t.Fatal(err)
			}
			if _, ok := get(t, c, "v1", "ConfigMap", ns, name); ok {
				t.Fatal("a taken-over object survived the destroy of the set that owns it")
			}
		})
	}
}

// Two sets that race for one new object: the API server lets exactly one
// create it, and the other fails before it writes it, naming the winner; the
// object holds the winner's content, and only the winner records it.
// Repeated, with a fresh object each time.
func TestEngine_concurrentClaimsExactlyOneWins(t *testing.T) {
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "own")
	for round := range 5 {
		name := fmt.Sprintf("contested-%d", round)
		specs := make([]*Spec, 2)
		for i := range specs {
			specs[i] = &Spec{Name: fmt.Sprintf("racer-%d-%d", round, i), Namespace: ns, Owner: kube.NewOwnerID(),
				ResourcesTemplate: fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {by: racer-%d}\n", name, i)}
		}
		// Both plans see no object: both would create it.
		planned := Adoptions{ns + "_" + name + "__ConfigMap": false}
		results := make([]*Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range specs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = e.Apply(ctx, specs[i], nil, ApplyOptions{Planned: planned})
			}()
		}
		wg.Wait()
		won := -1
		for i := range errs {
			if errs[i] == nil {
				if won >= 0 {
					t.Fatalf("round %d: both sets applied the object", round)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("round %d: neither won: %v; %v", round, errs[0], errs[1])
		}
		lost := 1 - won
		var oe *OwnershipError
		var stale *StalePlanError
		switch {
		case errors.As(errs[lost], &oe):
			if oe.Owner.ID != specs[won].Owner {
				t.Fatalf("round %d: the loser names %s, not the winner %s", round, oe.Owner, specs[won].Owner)
			}
		case errors.As(errs[lost], &stale):
			// The loser read the object after the winner created it: it
			// refused before the apply, as a stale plan.
		default:
			t.Fatalf("round %d: the loser's error names no owner: %v", round, errs[lost])
		}
		if len(results[lost].Inventory) != 0 {
			t.Fatalf("round %d: the loser recorded %v", round, results[lost].Inventory)
		}
		u, _ := get(t, c, "v1", "ConfigMap", ns, name)
		if u.Object["data"].(map[string]any)["by"] != fmt.Sprintf("racer-%d", won) || u.GetLabels()[kube.OwnerLabel] != specs[won].Owner {
			t.Fatalf("round %d: object %v, want the winner's", round, u.Object)
		}
		if _, err := e.Delete(ctx, specs[won], results[won].Inventory); err != nil {
			t.Fatal(err)
		}
	}
}
