package resourceset

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// List finds a stevedore set by its objects' labels and a flux-operator
// ResourceSet by its kind, with their owners, object counts and whether the
// import takes them; each filter narrows it; a kind the cluster does not
// serve (no flux-operator CRD) lists none, without an error.
func TestList(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := testenv.Namespace(t, c, "list")
	owner := kube.NewOwnerID()
	spec := &Spec{Name: "web", Namespace: ns, Owner: owner, Timeout: time.Minute, ResourcesTemplate: fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: %[1]s, labels: {tier: front}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: %[1]s}
`, ns)}
	if _, err := e.Apply(ctx, spec, nil, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.InstallResourceSetCRD(t, c)
	rs := &unstructured.Unstructured{}
	rs.SetGroupVersionKind(FluxOperatorResourceSet)
	rs.SetNamespace(ns)
	rs.SetName("tenants")
	rs.SetLabels(map[string]string{"team": "a"})
	rs.Object["spec"] = map[string]any{}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	rs.Object["status"] = map[string]any{"inventory": map[string]any{"entries": []any{
		map[string]any{"id": ns + "_x__ConfigMap", "v": "v1"}, map[string]any{"id": ns + "_y__ConfigMap", "v": "v1"}, map[string]any{"id": ns + "_z__ConfigMap", "v": "v1"},
	}}}
	if err := c.Status().Update(ctx, rs); err != nil {
		t.Fatal(err)
	}

	// The CRD may be new to the factory's discovery: a fresh engine sees it.
	e, _ = newEngine(t)
	show := func(sets []ListedSet) string {
		var out []string
		for _, s := range sets {
			out = append(out, fmt.Sprintf("%s/%s %s objects=%d owners=%d importable=%t", s.Namespace, s.Name, s.Owner, s.Objects, len(s.OwnerIDs), s.Importable))
		}
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct {
		opts ListOptions
		want string
	}{
		{ListOptions{Namespace: ns}, fmt.Sprintf("%[1]s/tenants flux-operator objects=3 owners=0 importable=true\n%[1]s/web stevedore objects=2 owners=1 importable=true", ns)},
		{ListOptions{Namespace: ns, Owner: kube.ListedStevedore}, fmt.Sprintf("%s/web stevedore objects=2 owners=1 importable=true", ns)},
		{ListOptions{Namespace: ns, Owner: kube.TakeOverFluxOperator}, fmt.Sprintf("%s/tenants flux-operator objects=3 owners=0 importable=true", ns)},
		// A stevedore set is listed when one of its objects matches (and
		// counts them all); a ResourceSet by its own labels.
		{ListOptions{Namespace: ns, Selector: labels.SelectorFromSet(labels.Set{"tier": "front"})}, fmt.Sprintf("%s/web stevedore objects=2 owners=1 importable=true", ns)},
		{ListOptions{Namespace: ns, Selector: labels.SelectorFromSet(labels.Set{"team": "a"})}, fmt.Sprintf("%s/tenants flux-operator objects=3 owners=0 importable=true", ns)},
		{ListOptions{Namespace: ns + "-none"}, ""},
	} {
		got, err := e.List(ctx, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if s := show(got); s != tc.want {
			t.Errorf("%+v:\n%s\nwant:\n%s", tc.opts, s, tc.want)
		}
		for _, s := range got {
			if s.Owner == kube.ListedStevedore && (len(s.OwnerIDs) != 1 || s.OwnerIDs[0] != owner) {
				t.Errorf("%s/%s: owner IDs %v, want [%s]", s.Namespace, s.Name, s.OwnerIDs, owner)
			}
		}
	}
	// The stevedore set is imported by <namespace>/<name>.
	if imp, err := e.Import(ctx, ns, "web"); err != nil || imp.Owner != owner || len(imp.Inventory) != 2 {
		t.Errorf("import %s/web: %+v, %v", ns, imp, err)
	}
	// The ResourceSet is read by its import ID's namespace and name.
	if fo, err := e.ReadFluxOperator(ctx, ns, "tenants"); err != nil || fo.Spec.Name != "tenants" || fo.Objects != 3 ||
		!slices.Equal(fo.Spec.TakeOverFrom, []string{kube.TakeOverFluxOperator}) {
		t.Errorf("read flux-operator ResourceSet %s/tenants: %+v, %v", ns, fo, err)
	}
	// An import that names nothing lists the candidates, by import ID.
	candidates := fmt.Sprintf("import by the IDs flux-operator:%[1]s/tenants, %[1]s/web", ns)
	if _, err := e.Import(ctx, ns, "nope"); err == nil || !strings.Contains(err.Error(), candidates) {
		t.Errorf("import %s/nope: %v, want the candidates %q", ns, err, candidates)
	}
	if _, err := e.ReadFluxOperator(ctx, ns, "nope"); err == nil || !strings.Contains(err.Error(), "no flux-operator ResourceSet "+ns+"/nope") ||
		!strings.Contains(err.Error(), candidates) {
		t.Errorf("read flux-operator ResourceSet %s/nope: %v, want the candidates %q", ns, err, candidates)
	}
	var nf *NotFoundError
	if _, err := e.Import(ctx, ns+"-none", "nope"); !errors.As(err, &nf) || !strings.Contains(err.Error(), "no resource set in namespace") {
		t.Errorf("import from a namespace without sets: %v", err)
	}
	// A kind the cluster does not serve: none, no error.
	none, err := e.listFluxOperator(ctx, ListOptions{}, schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v9", Kind: "ResourceSet"})
	if err != nil || len(none) != 0 {
		t.Errorf("a kind the cluster does not serve: %v, %v", none, err)
	}
}
