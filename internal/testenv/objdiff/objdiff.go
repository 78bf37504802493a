// Package objdiff is for tests that compare what a plan said an apply does to
// each object with what the apply did: the objects read by inventory ID, and
// their difference in the form of a plan's `changes`.
package objdiff

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	wjsondiff "github.com/wI2L/jsondiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Live reads the object of inventory ID id, nil when there is none.
func Live(ctx context.Context, t testing.TB, c client.Client, id string) *unstructured.Unstructured {
	t.Helper()
	m, err := object.ParseObjMetadata(id)
	if err != nil {
		t.Fatal(err)
	}
	mapping, err := c.RESTMapper().RESTMapping(m.GroupKind)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("read %s: %v", id, err)
	}
	return u
}

// Diff is what happened to object id between before and after (nil when
// absent), as a plan's `changes` lists it: "create", "delete", or "update"
// with the JSON patch of the whole object, leaving out what the API server
// and controllers write (resourceVersion, generation, managedFields,
// status), Secret data masked. The zero Drift says nothing changed.
func Diff(t testing.TB, id string, before, after *unstructured.Unstructured) kube.Drift {
	t.Helper()
	switch {
	case before == nil && after == nil:
		return kube.Drift{}
	case before == nil:
		return kube.Drift{ID: id, Type: "create"}
	case after == nil:
		return kube.Drift{ID: id, Type: "delete"}
	}
	clean := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy()
		for _, f := range [][]string{{"metadata", "resourceVersion"}, {"metadata", "generation"}, {"metadata", "managedFields"}, {"status"}} {
			unstructured.RemoveNestedField(c.Object, f...)
		}
		return c.Object
	}
	patch, err := wjsondiff.Compare(clean(before), clean(after), wjsondiff.Rationalize())
	if err != nil {
		t.Fatal(err)
	}
	if len(patch) == 0 {
		return kube.Drift{}
	}
	if after.GroupVersionKind().Group == "" && after.GetKind() == "Secret" {
		patch = jsondiff.MaskSecretPatchData(patch)
	}
	return kube.Drift{ID: id, Type: "update", Changes: kube.ChangesOf(before, patch)}
}

// Sorted is cs sorted by path and operation, to compare change lists.
func Sorted(cs []kube.Change) []kube.Change {
	out := slices.Clone(cs)
	slices.SortFunc(out, func(a, b kube.Change) int { return strings.Compare(a.Path+" "+a.Op, b.Path+" "+b.Op) })
	return out
}
