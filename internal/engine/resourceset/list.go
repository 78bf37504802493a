package resourceset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// ListOwners are the owners a listing of sets names, and filters by: a
// stevedore_resourceset, or a flux-operator ResourceSet.
var ListOwners = []string{kube.ListedStevedore, kube.TakeOverFluxOperator}

// FluxOperatorResourceSet is the kind of flux-operator's ResourceSet.
var FluxOperatorResourceSet = schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "ResourceSet"}

// ListOptions narrows a listing of sets.
type ListOptions struct {
	// Namespace is the namespace of the sets, "" every one.
	Namespace string
	// Owner is one of ListOwners, "" any.
	Owner string
	// Selector matches the labels of a flux-operator ResourceSet, or of
	// one object at least of a stevedore set (which has no object of its
	// own); nil matches every set.
	Selector labels.Selector
	// NamespaceMustExist makes a Namespace the cluster does not have an
	// error (kube.NamespaceNotFoundError), not an empty listing.
	NamespaceMustExist bool
}

// ListedSet is a set in the cluster.
type ListedSet struct {
	Namespace, Name string
	// Owner is one of ListOwners.
	Owner string
	// OwnerIDs are the owner IDs a stevedore set's objects carry: one per
	// instance, none for a set made before owners were recorded. Two mean
	// two configurations' sets of one name, which import refuses.
	OwnerIDs []string
	// Objects is the number of objects of the set: those that carry a
	// stevedore set's labels, or a ResourceSet's status.inventory.
	Objects int
	// Importable says that stevedore_resourceset's import takes the set, by
	// ImportIDOf: a stevedore set whose objects' labels name its namespace
	// and name, or a flux-operator ResourceSet (whose objects the apply after
	// the import takes over).
	Importable bool
}

// List lists the sets in the cluster, sorted by namespace, name and owner:
// stevedore's, from the objects that carry a set's labels (one metadata LIST
// per kind the cluster serves, as an import does: a stevedore set has no
// object of its own), and flux-operator's ResourceSets, when the cluster
// serves the kind (no CRD: none).
func (e *Engine) List(ctx context.Context, opts ListOptions) ([]ListedSet, error) {
	if opts.Namespace != "" && opts.NamespaceMustExist {
		if err := e.kube.CheckNamespace(ctx, opts.Namespace); err != nil {
			return nil, err
		}
	}
	var out []ListedSet
	if opts.Owner == "" || opts.Owner == kube.ListedStevedore {
		sets, err := e.listStevedore(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, sets...)
	}
	if opts.Owner == "" || opts.Owner == kube.TakeOverFluxOperator {
		sets, err := e.listFluxOperator(ctx, opts, FluxOperatorResourceSet)
		if err != nil {
			return nil, err
		}
		out = append(out, sets...)
	}
	slices.SortFunc(out, func(a, b ListedSet) int {
		return strings.Compare(a.Namespace+"/"+a.Name+"/"+a.Owner, b.Namespace+"/"+b.Name+"/"+b.Owner)
	})
	return out, nil
}

func (e *Engine) listStevedore(ctx context.Context, opts ListOptions) ([]ListedSet, error) {
	has, err := labels.NewRequirement(NameLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*has)
	if opts.Namespace != "" {
		in, err := labels.NewRequirement(NamespaceLabel, selection.Equals, []string{opts.Namespace})
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*in)
	}
	objs, err := e.kube.ListSelected(ctx, client.MatchingLabelsSelector{Selector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the objects of stevedore sets: %w", err)
	}
	type key struct{ ns, name string }
	byKey := map[key]*ListedSet{}
	matched := map[key]bool{}
	var order []key
	for _, o := range objs {
		l := o.GetLabels()
		k := key{l[NamespaceLabel], l[NameLabel]}
		s, ok := byKey[k]
		if !ok {
			s = &ListedSet{Namespace: k.ns, Name: k.name, Owner: kube.ListedStevedore, Importable: k.ns != "" && k.name != ""}
			byKey[k] = s
			order = append(order, k)
		}
		s.Objects++
		if id := l[kube.OwnerLabel]; id != "" && !slices.Contains(s.OwnerIDs, id) {
			s.OwnerIDs = append(s.OwnerIDs, id)
		}
		if opts.Selector == nil || opts.Selector.Matches(labels.Set(l)) {
			matched[k] = true
		}
	}
	var out []ListedSet
	for _, k := range order {
		if matched[k] {
			slices.Sort(byKey[k].OwnerIDs)
			out = append(out, *byKey[k])
		}
	}
	return out, nil
}

// listFluxOperator lists the objects of kind gvk (flux-operator's
// ResourceSet): none when the cluster does not serve the kind.
func (e *Engine) listFluxOperator(ctx context.Context, opts ListOptions, gvk schema.GroupVersionKind) ([]ListedSet, error) {
	c, err := e.kube.Client()
	if err != nil {
		return nil, err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	var lo []client.ListOption
	if opts.Namespace != "" {
		lo = append(lo, client.InNamespace(opts.Namespace))
	}
	if opts.Selector != nil {
		lo = append(lo, client.MatchingLabelsSelector{Selector: opts.Selector})
	}
	err = c.List(ctx, list, lo...)
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list %s: %w", gvk, err)
	}
	out := make([]ListedSet, 0, len(list.Items))
	for _, o := range list.Items {
		entries, _, _ := unstructured.NestedSlice(o.Object, "status", "inventory", "entries")
		out = append(out, ListedSet{Namespace: o.GetNamespace(), Name: o.GetName(), Owner: kube.TakeOverFluxOperator, Objects: len(entries), Importable: true})
	}
	return out, nil
}
