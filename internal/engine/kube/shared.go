package kube

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SharedListTTL is how long a shared metadata LIST serves the refreshes of a
// provider process after it was taken. A CLI starts the provider afresh for
// each plan, so no LIST is older than the plan; within a plan, the LIST
// stands for what a GET would have read a moment earlier.
const SharedListTTL = 10 * time.Second

// sharedLists are the metadata LISTs that the drift checks of one factory's
// refreshes share: one per kind, namespace and label key, instead of one GET
// per object and release. A LIST selects the objects that carry the label
// key, so that a namespace's other objects (Helm's release Secrets among
// them) are not read.
type sharedLists struct {
	mu    sync.Mutex
	lists map[sharedKey]*sharedList
	// now is the clock, for tests.
	now func() time.Time
}

type sharedKey struct {
	gvk       schema.GroupVersionKind
	namespace string
	label     string
}

// sharedList is one LIST: done is closed when byName and err are set.
type sharedList struct {
	done   chan struct{}
	taken  time.Time
	byName map[string]*metav1.PartialObjectMetadata
	err    error
}

func newSharedLists() *sharedLists {
	return &sharedLists{lists: map[sharedKey]*sharedList{}, now: time.Now}
}

// get returns the LIST of key, taking it when there is none younger than
// SharedListTTL. Concurrent callers of one key wait for one LIST.
func (s *sharedLists) get(ctx context.Context, c client.Client, key sharedKey) *sharedList {
	s.mu.Lock()
	l, ok := s.lists[key]
	if ok {
		select {
		case <-l.done:
			if s.now().Sub(l.taken) > SharedListTTL {
				ok = false
			}
		default: // being taken: wait for it
		}
	}
	if !ok {
		l = &sharedList{done: make(chan struct{}), taken: s.now()}
		s.lists[key] = l
		s.mu.Unlock()
		l.byName, l.err = listMetadata(ctx, c, key)
		close(l.done)
		return l
	}
	s.mu.Unlock()
	select {
	case <-l.done:
		return l
	case <-ctx.Done():
		return &sharedList{err: ctx.Err()}
	}
}

// listMetadata is the metadata LIST of key's kind in its namespace, of the
// objects that carry its label (all of them without one), by name.
func listMetadata(ctx context.Context, c client.Client, key sharedKey) (map[string]*metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(key.gvk.GroupVersion().WithKind(key.gvk.Kind + "List"))
	var opts []client.ListOption
	if key.label != "" {
		opts = append(opts, client.HasLabels{key.label})
	}
	if key.namespace != "" {
		opts = append(opts, client.InNamespace(key.namespace))
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	byName := make(map[string]*metav1.PartialObjectMetadata, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	return byName, nil
}

// lookupShared is Lookup through the factory's shared LISTs of the objects
// that carry label: an object the LIST has is read from it; one it does not
// have (without the label, or gone), or whose LIST failed, is read with a
// GET, so that the outcome is Lookup's.
func (m *Manager) lookupShared(ctx context.Context, objs []*unstructured.Unstructured, label string) (live []*metav1.PartialObjectMetadata, errs []error) {
	live = make([]*metav1.PartialObjectMetadata, len(objs))
	errs = make([]error, len(objs))
	byKey := map[sharedKey][]int{}
	for i, o := range objs {
		k := sharedKey{gvk: o.GroupVersionKind(), namespace: o.GetNamespace(), label: label}
		byKey[k] = append(byKey[k], i)
	}
	var mu sync.Mutex
	var missed []int
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for k, idx := range byKey {
		g.Go(func() error {
			l := m.shared.get(ctx, m.client, k)
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				if pm, ok := l.byName[objs[i].GetName()]; ok && l.err == nil {
					live[i] = pm
				} else if !meta.IsNoMatchError(l.err) {
					missed = append(missed, i)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(missed) == 0 {
		return live, errs
	}
	rest := make([]*unstructured.Unstructured, len(missed))
	for j, i := range missed {
		rest[j] = objs[i]
	}
	got, gotErrs := m.Lookup(ctx, rest)
	for j, i := range missed {
		live[i], errs[i] = got[j], gotErrs[j]
	}
	return live, errs
}
