package resourceset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// offlineSpec renders objects of every scope: namespaced without a
// namespace, cluster-scoped with one, a kind whose CRD is in the set, and
// the same in two steps.
func offlineSpec(t testing.TB, ns string) *Spec {
	return &Spec{
		Name: "render", Namespace: ns,
		Inputs:         []map[string]any{{"tenant": "a"}, {"tenant": "b"}},
		CommonMetadata: CommonMetadata{Labels: map[string]string{"team": "x"}},
		Steps: []Step{
			{Name: "base", Resources: []map[string]any{mustMap(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.offline.stevedore.dev}
spec:
  group: offline.stevedore.dev
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`), mustMap(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: offline-<< inputs.tenant >>-`+ns+`, namespace: ignored}
rules: []
`)}},
			{Name: "apps", ResourcesTemplate: `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-<< inputs.tenant >>}
data: {tenant: << inputs.tenant | quote >>}
---
apiVersion: offline.stevedore.dev/v1
kind: Gadget
metadata: {name: g-<< inputs.tenant >>}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h-<< inputs.tenant >>}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 2
`},
		},
	}
}

func TestRenderOffline(t *testing.T) {
	got, err := RenderOffline(offlineSpec(t, "apps"), kube.OfflineRESTMapper(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "CustomResourceDefinition//gadgets.offline.stevedore.dev ClusterRole//offline-a-apps ClusterRole//offline-b-apps " +
		"ConfigMap/apps/cm-a Gadget/apps/g-a HorizontalPodAutoscaler/apps/h-a ConfigMap/apps/cm-b Gadget/apps/g-b HorizontalPodAutoscaler/apps/h-b"
	if ids(got.Objects) != want {
		t.Errorf("objects\n%s\nwant\n%s", ids(got.Objects), want)
	}
	for _, o := range got.Objects {
		l := o.GetLabels()
		if l[NameLabel] != "render" || l[NamespaceLabel] != "apps" || l["team"] != "x" {
			t.Errorf("%s labels %v", describe(o), l)
		}
		if _, ok := l[kube.OwnerLabel]; ok {
			t.Errorf("%s has an owner ID", describe(o))
		}
	}
	if len(got.Inventory) != len(got.Objects) || got.Steps["apps_cm-a__ConfigMap"] != "apps" || got.Steps["_offline-a-apps_rbac.authorization.k8s.io_ClusterRole"] != "base" {
		t.Errorf("inventory %v, steps %v", got.Inventory, got.Steps)
	}
	if len(got.Warnings) != 2 || got.Warnings[0].Path != "steps[0]" || got.Warnings[1].Path != "steps[0]" {
		t.Errorf("warnings %+v, want the ignored namespace of the ClusterRoles", got.Warnings)
	}
	if want, _ := Manifests(got.Objects); got.Manifests != want {
		t.Errorf("manifests are not Manifests(objects)")
	}
}

func TestRenderOffline_unknownKind(t *testing.T) {
	spec := &Spec{Name: "s", Namespace: "apps", Resources: []map[string]any{mustMap(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`)}}
	_, err := RenderOffline(spec, kube.OfflineRESTMapper(nil))
	var fe *fielderr.Error
	if !errors.Is(err, ErrUnknownKind) || !errors.As(err, &fe) || fe.Path != "resources" {
		t.Fatalf("error %v, want an unknown kind on resources", err)
	}
	for _, namespaced := range []bool{true, false} {
		got, err := RenderOffline(spec, kube.OfflineRESTMapper([]kube.KindScope{
			{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespaced: namespaced}}))
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "apps", false: ""}[namespaced]
		if got.Objects[0].GetNamespace() != want {
			t.Errorf("namespaced %v: namespace %q", namespaced, got.Objects[0].GetNamespace())
		}
	}
}

// TestRenderOffline_isPlan renders a set offline and plans it on the test
// cluster: the same objects, inventory, steps and manifests.
func TestRenderOffline_isPlan(t *testing.T) {
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "offline")
	spec := offlineSpec(t, ns)
	plan, err := e.Plan(context.Background(), spec, nil, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	off, err := RenderOffline(offlineSpec(t, ns), kube.OfflineRESTMapper(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(off.Inventory, plan.Inventory) || !reflect.DeepEqual(off.Steps, plan.Steps) || off.Manifests != plan.Manifests {
		t.Errorf("offline render differs from the plan:\ninventory %v\nplan      %v\nsteps %v\nplan  %v\nmanifests\n%s\nplan\n%s",
			off.Inventory, plan.Inventory, off.Steps, plan.Steps, off.Manifests, plan.Manifests)
	}
	if fmt.Sprint(off.Warnings) != fmt.Sprint(plan.Warnings) {
		t.Errorf("warnings %v, plan's %v", off.Warnings, plan.Warnings)
	}
}
