package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ListLabelled finds every object of every kind the cluster serves (in the
// preferred version of its group) that carries the labels of selector, in
// all namespaces: one metadata LIST per kind. It is for finding what an
// owner left behind without knowing its kinds (an import); a kind the caller
// may not list is skipped. Objects are sorted by inventory ID.
func (f *Factory) ListLabelled(ctx context.Context, selector map[string]string) ([]*metav1.PartialObjectMetadata, error) {
	return f.ListSelected(ctx, client.MatchingLabels(selector))
}

// ListSelected is ListLabelled with any label selector (an existence
// selector, to find every owner's objects).
func (f *Factory) ListSelected(ctx context.Context, selector client.ListOption) ([]*metav1.PartialObjectMetadata, error) {
	dc, err := f.Discovery()
	if err != nil {
		return nil, err
	}
	c, err := f.Client()
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the cluster's kinds: %w", err)
	}
	var kinds []schema.GroupVersionKind
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "list") && !strings.Contains(r.Name, "/") { // not a subresource
				kinds = append(kinds, gv.WithKind(r.Kind))
			}
		}
	}
	var mu sync.Mutex
	var out []*metav1.PartialObjectMetadata
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	errs := make([]error, len(kinds))
	for i, gvk := range kinds {
		g.Go(func() error {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err := c.List(ctx, list, selector)
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) || meta.IsNoMatchError(err):
				return nil
			case err != nil:
				errs[i] = fmt.Errorf("list %s: %w", gvk, err)
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			for k := range list.Items {
				o := &list.Items[k]
				o.SetGroupVersionKind(gvk)
				out = append(out, o)
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *metav1.PartialObjectMetadata) int {
		ia, ib := IDOfMetadata(a), IDOfMetadata(b)
		switch {
		case ia < ib:
			return -1
		case ia > ib:
			return 1
		}
		return 0
	})
	return out, nil
}

// IDOfMetadata is the inventory ID of an object read as metadata.
func IDOfMetadata(o *metav1.PartialObjectMetadata) string {
	return idOf(o)
}

// NamespaceNotFoundError says that a listing names a namespace the cluster
// does not have: its attribute is `namespace` (fielderr.Attributed).
type NamespaceNotFoundError struct{ Namespace string }

func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("namespace %q does not exist in the cluster", e.Namespace)
}

// AttributePath is `namespace`, the filter that names it.
func (e *NamespaceNotFoundError) AttributePath() string { return "namespace" }

// Summary is the diagnostic's summary (fielderr.Summarized).
func (e *NamespaceNotFoundError) Summary() string { return "Namespace not found" }

// CheckNamespace says whether the namespace ns exists: a
// NamespaceNotFoundError when it does not. A caller that may not read
// namespaces (a namespaced role) cannot tell, and is not refused.
func (f *Factory) CheckNamespace(ctx context.Context, ns string) error {
	c, err := f.Client()
	if err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	err = c.Get(ctx, client.ObjectKey{Name: ns}, m)
	switch {
	case apierrors.IsNotFound(err):
		return &NamespaceNotFoundError{Namespace: ns}
	case apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return fmt.Errorf("read namespace %s: %w", ns, err)
	}
	return nil
}
