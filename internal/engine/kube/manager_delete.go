package kube

import (
	"context"
	"errors"
	"fmt"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeleteOptions are the options of Delete.
type DeleteOptions struct {
	// Inclusions restricts deletion to in-cluster objects that carry all of these
	// labels: the owner labels, so that we never delete what we do not own.
	Inclusions map[string]string
	// Exclusions keeps in-cluster objects that carry any of these labels or
	// annotations (prune: disabled).
	Exclusions map[string]string
}

// Delete deletes objects with background propagation; objects already gone are
// not an error. The change set says what was deleted and what was skipped.
func (m *Manager) Delete(ctx context.Context, objs []*unstructured.Unstructured, opts DeleteOptions) (*ssa.ChangeSet, error) {
	o := ssa.DefaultDeleteOptions()
	o.Inclusions = opts.Inclusions
	o.Exclusions = opts.Exclusions
	return m.rm.DeleteAll(ctx, objs, o)
}

// DisownOptions are the options of Disown.
type DisownOptions struct {
	// Owner holds the owner labels to remove. An object that does not carry all
	// of them, with these values, is not ours and is left alone.
	Owner map[string]string
	// Exclusions leaves alone the objects that carry any of these labels or
	// annotations (prune: disabled).
	Exclusions map[string]string
	// Annotations are removed too (the adoption record).
	Annotations []string
	// Only, when set, limits Disown to the objects that carry any of these
	// labels or annotations.
	Only map[string]string
}

// Disown removes the owner labels from objs and leaves the objects otherwise as
// they are. It patches metadata.labels with a JSON merge patch (the owner keys
// set to null): a server-side apply without the labels would also drop every
// other field our field manager owns, such as a ConfigMap's data. Objects
// already gone are not an error.
func (m *Manager) Disown(ctx context.Context, objs []*unstructured.Unstructured, opts DisownOptions) error {
	owned := labels.SelectorFromSet(opts.Owner)
	errs := make([]error, len(objs))
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for i, o := range objs {
		g.Go(func() error {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := m.client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
					errs[i] = fmt.Errorf("%s query failed: %w", Describe(o), err)
				}
				return nil
			}
			if !owned.Matches(labels.Set(live.GetLabels())) || ssautils.AnyInMetadata(live, opts.Exclusions) ||
				(opts.Only != nil && !ssautils.AnyInMetadata(live, opts.Only)) {
				return nil
			}
			before := live.DeepCopy()
			l := live.GetLabels()
			for k := range opts.Owner {
				delete(l, k)
			}
			live.SetLabels(l)
			if ann := live.GetAnnotations(); len(opts.Annotations) > 0 && ann != nil {
				for _, k := range opts.Annotations {
					delete(ann, k)
				}
				live.SetAnnotations(ann)
			}
			if err := m.client.Patch(ctx, live, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
				errs[i] = fmt.Errorf("%s removing the owner labels failed: %w", Describe(o), err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}
