package resourceset

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Preview is what an apply of the set would do to each of its objects in the
// cluster, found at plan by server-side dry runs of the apply (our field
// manager, forced), which change nothing.
type Preview struct {
	// Changes lists the objects the apply creates and those it changes,
	// with the changed JSON pointers (Secret data masked), sorted by ID.
	// Objects it leaves as they are are not listed; prunes show in the
	// planned inventory.
	Changes []kube.Drift
	// Warnings name what the apply may trip on that another resource can
	// still provide first: a namespace, a kind, a permission.
	Warnings []string
	// Unknown, when not empty, says why the changes could not be found
	// (Changes is then nil): the plan's own warnings say it to the user.
	Unknown string
}

// PreviewError is an object the API server refuses in the dry run: apply
// would fail on it for sure, unlike what Preview only warns about. It names
// the object; Preview names the set in front of it.
type PreviewError struct {
	Object string // kube.Describe of the object
	Err    error
}

func (e *PreviewError) Error() string {
	return fmt.Sprintf("%s: the API server refuses it, so apply would fail: %v", e.Object, e.Err)
}
func (e *PreviewError) Unwrap() error { return e.Err }

// Preview dry-runs the apply of spec's objects. A missing namespace or kind
// that the set itself creates is no warning: its objects are created after it.
func (e *Engine) Preview(ctx context.Context, spec *Spec) (*Preview, error) {
	spec = spec.withDefaults()
	p, err := e.preview(ctx, spec)
	return p, objectError(spec, err)
}

func (e *Engine) preview(ctx context.Context, spec *Spec) (*Preview, error) {
	spec, err := e.resolveInputs(ctx, spec)
	if err != nil {
		return nil, err
	}
	parts, _, err := e.desired(spec)
	if err != nil {
		return nil, err
	}
	objs := flatten(parts)
	if missing := e.missingServiceAccount(ctx, spec); missing != nil {
		return &Preview{Unknown: missing.Error()}, nil
	}
	m, err := e.manager(spec)
	if err != nil {
		return nil, err
	}
	namespaces, kinds := map[string]bool{}, map[string]bool{}
	for _, o := range objs {
		switch {
		case o.GroupVersionKind().Group == "" && o.GetKind() == "Namespace":
			namespaces[o.GetName()] = true
		case o.GroupVersionKind().Group == "apiextensions.k8s.io" && o.GetKind() == "CustomResourceDefinition":
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			kinds[kind+"."+group] = true
		}
	}
	p := &Preview{}
	var mu sync.Mutex
	warn := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		p.Warnings = append(p.Warnings, fmt.Sprintf(format, args...))
	}
	onError := func(obj *unstructured.Unstructured, err error) (*jsondiff.Diff, error) {
		create := jsondiff.NewDiffForUnstructured(obj, nil, jsondiff.DiffTypeCreate, nil)
		gvk := obj.GroupVersionKind()
		switch {
		case kube.IsNoKindMatch(err):
			if !kinds[gvk.Kind+"."+gvk.Group] {
				warn("%s: the cluster does not serve %s: apply fails unless another resource installs its CustomResourceDefinition first",
					kube.Describe(obj), gvk.GroupKind())
			}
			return create, nil
		case apierrors.IsNotFound(err) && obj.GetNamespace() != "":
			if !namespaces[obj.GetNamespace()] {
				warn("%s: namespace %s does not exist: apply fails unless another resource creates it first",
					kube.Describe(obj), obj.GetNamespace())
			}
			return create, nil
		case apierrors.IsForbidden(err):
			warn("%s: the dry run was forbidden (%v): apply fails unless the permission is granted first", kube.Describe(obj), err)
			return nil, nil
		}
		// On the attribute that renders the object (`resources[2]`).
		return nil, fielderr.Wrap(e.objectPath(spec, kube.ID(obj)), &PreviewError{Object: kube.Describe(obj), Err: err})
	}
	if p.Changes, err = m.Drift(ctx, objs, kube.DriftOptions{OnError: onError}); err != nil {
		return nil, err
	}
	sort.Strings(p.Warnings)
	return p, nil
}
