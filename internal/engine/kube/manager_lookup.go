package kube

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lookup reads the metadata of objs from the cluster, concurrently. live[i] is
// nil when objs[i] does not exist, which includes a kind the cluster does not
// serve yet (its CRD comes later in the same set); errs[i] is the error of
// reading objs[i], nil when it was read. Metadata is all the callers need, and
// it keeps Secret data off the wire.
//
// The objects of a kind and namespace that has lookupListMin or more of them
// are read with one metadata LIST of that kind and namespace instead of a GET
// each: a LIST reads what the GETs would have read (a consistent read, the
// same metadata). When that LIST fails (a service account allowed to get but
// not to list), they are read with GETs, which say of which object what went
// wrong.
func (m *Manager) Lookup(ctx context.Context, objs []*unstructured.Unstructured) (live []*metav1.PartialObjectMetadata, errs []error) {
	live = make([]*metav1.PartialObjectMetadata, len(objs))
	errs = make([]error, len(objs))
	// The RESTMapper discovers again on every miss: ask it once per kind, not
	// once per object of a kind the cluster does not serve.
	served := map[schema.GroupVersionKind]error{}
	type group struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	byGroup := map[group][]int{}
	for i, o := range objs {
		gvk := o.GroupVersionKind()
		if _, ok := served[gvk]; !ok {
			_, served[gvk] = m.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
		if err := served[gvk]; err != nil {
			if !meta.IsNoMatchError(err) {
				errs[i] = fmt.Errorf("%s: %w", Describe(o), err)
			}
			continue
		}
		g := group{gvk, o.GetNamespace()}
		byGroup[g] = append(byGroup[g], i)
	}
	var mu sync.Mutex
	var get []int
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for grp, idx := range byGroup {
		if len(idx) < lookupListMin {
			get = append(get, idx...)
			continue
		}
		g.Go(func() error {
			byName, err := listMetadata(ctx, m.client, sharedKey{gvk: grp.gvk, namespace: grp.ns})
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				if err != nil {
					get = append(get, i)
				} else {
					live[i] = byName[objs[i].GetName()]
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	for _, i := range get {
		g.Go(func() error {
			o := objs[i]
			pm := &metav1.PartialObjectMetadata{}
			pm.SetGroupVersionKind(o.GroupVersionKind())
			switch err := m.client.Get(ctx, client.ObjectKeyFromObject(o), pm); {
			case err == nil:
				live[i] = pm
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			default:
				errs[i] = fmt.Errorf("%s: %w", Describe(o), err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return live, errs
}

// lookupListMin is how many objects of one kind and namespace Lookup reads
// with a LIST rather than with a GET each: below it, the GETs cost less than
// a LIST of a namespace that holds many other objects of the kind.
const lookupListMin = 8

// lookupOwned is Lookup for objects that carry the owner labels: one
// metadata LIST per kind and namespace with that label selector. An object
// the LIST does not return (gone, or without the labels now) is nil, as a
// missing object is for Lookup; a kind or namespace whose LIST fails is an
// error for each of its objects.
func (m *Manager) lookupOwned(ctx context.Context, objs []*unstructured.Unstructured, owner map[string]string) (live []*metav1.PartialObjectMetadata, errs []error) {
	live = make([]*metav1.PartialObjectMetadata, len(objs))
	errs = make([]error, len(objs))
	type group struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	byGroup := map[group][]int{}
	for i, o := range objs {
		g := group{o.GroupVersionKind(), o.GetNamespace()}
		byGroup[g] = append(byGroup[g], i)
	}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for grp, idx := range byGroup {
		g.Go(func() error {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(grp.gvk.GroupVersion().WithKind(grp.gvk.Kind + "List"))
			opts := []client.ListOption{client.MatchingLabels(owner)}
			if grp.ns != "" {
				opts = append(opts, client.InNamespace(grp.ns))
			}
			err := m.client.List(ctx, list, opts...)
			byName := make(map[string]*metav1.PartialObjectMetadata, len(list.Items))
			for k := range list.Items {
				byName[list.Items[k].GetName()] = &list.Items[k]
			}
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				switch {
				case meta.IsNoMatchError(err):
				case err != nil:
					errs[i] = fmt.Errorf("%s: %w", Describe(objs[i]), err)
				default:
					live[i] = byName[objs[i].GetName()]
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	return live, errs
}
