package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Claim is what an apply takes an object with, by inventory ID (Claims):
// what the API server makes atomic, so that when two applies race for one
// object exactly one wins and the other fails before it writes it.
type Claim struct {
	// Create says the object must not exist: it is created (see
	// Manager.create), and if it exists the apply fails with a *ClaimError.
	Create bool
	// ResourceVersion, for an object that exists and is not yet the
	// applier's (adopted, or taken over), is the version its owner was read
	// from: before the apply, a merge patch that holds it as a precondition
	// sets Annotations, and fails with a *ClaimError if the object changed
	// since.
	ResourceVersion string
	Annotations     map[string]string
}

// Claims are the claims of an apply by inventory ID; objects without one are
// applied as they are.
type Claims map[string]Claim

// ClaimError is an object an apply could not claim: it was created, or
// changed, by someone else between the read that decided the claim and the
// write. Nothing was written to it.
type ClaimError struct {
	// ID is the object's inventory ID and Object names it (Describe).
	ID, Object string
	// Obj is the object the apply claimed.
	Obj *unstructured.Unstructured
	// Exists says the object was created by someone else (a Create claim).
	Exists bool
	Err    error
}

func (e *ClaimError) Error() string {
	if e.Exists {
		return fmt.Sprintf("%s was created by someone else while this apply was creating it: %v", e.Object, e.Err)
	}
	return fmt.Sprintf("%s was changed by someone else while this apply was taking it: %v", e.Object, e.Err)
}

func (e *ClaimError) Unwrap() error { return e.Err }

// applyClaimed applies objs as ssa's ApplyAll does, after the claims: the
// objects to create are created first (a create, then its managed fields
// moved to our field manager's Apply entry, as if applied server-side), and
// if any of them exists already, nothing else is applied; the objects to
// take are then taken (takeAll), and if any of them changed since it was
// read, nothing else is applied either.
func (m *Manager) applyClaimed(ctx context.Context, objs []*unstructured.Unstructured, o ssa.ApplyOptions, claims Claims) (*ssa.ChangeSet, error) {
	cs := ssa.NewChangeSet()
	var create, take, rest []*unstructured.Unstructured
	for _, obj := range objs {
		c, ok := claims[ID(obj)]
		switch {
		case ok && c.Create:
			create = append(create, obj)
		case ok && c.ResourceVersion != "":
			take = append(take, obj)
			rest = append(rest, obj)
		default:
			rest = append(rest, obj)
		}
	}
	if len(create) > 0 {
		entries, err := m.createAll(ctx, create)
		cs.Append(entries)
		if err != nil {
			return cs, err
		}
	}
	if err := m.takeAll(ctx, take, claims); err != nil {
		return cs, err
	}
	if len(rest) == 0 {
		return cs, nil
	}
	applied, err := m.rm.ApplyAll(ctx, rest, o)
	if applied != nil {
		cs.Append(applied.Entries)
	}
	return cs, err
}

// claimManagerSuffix names the field manager of the adoption records.
const claimManagerSuffix = "-claim"

// takeAll takes the objects that exist, concurrently: a merge patch of their
// claims' annotations with their claims' resourceVersion as a precondition.
// An object that changed since is a *ClaimError.
func (m *Manager) takeAll(ctx context.Context, objs []*unstructured.Unstructured, claims Claims) error {
	errs := make([]error, len(objs))
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for i, obj := range objs {
		g.Go(func() error {
			c := claims[ID(obj)]
			meta := map[string]any{"resourceVersion": c.ResourceVersion}
			if len(c.Annotations) > 0 {
				meta["annotations"] = c.Annotations
			}
			patch, _ := json.Marshal(map[string]any{"metadata": meta}) // plain maps always encode
			target := &unstructured.Unstructured{}
			target.SetGroupVersionKind(obj.GroupVersionKind())
			target.SetNamespace(obj.GetNamespace())
			target.SetName(obj.GetName())
			// Under a field manager of its own: the annotations are not
			// the applied object's, and no apply of ours takes them.
			err := m.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(m.fieldManager+claimManagerSuffix))
			switch {
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				errs[i] = &ClaimError{ID: ID(obj), Object: Describe(obj), Obj: obj, Err: err}
			case err != nil:
				errs[i] = fmt.Errorf("%s taking it failed: %w", Describe(obj), err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// createAll creates objs concurrently and returns the change set entries of
// those it created. An object that exists already is a *ClaimError.
func (m *Manager) createAll(ctx context.Context, objs []*unstructured.Unstructured) ([]ssa.ChangeSetEntry, error) {
	var mu sync.Mutex
	var entries []ssa.ChangeSetEntry
	errs := make([]error, len(objs))
	var g errgroup.Group
	g.SetLimit(managerConcurrency)
	for i, obj := range objs {
		g.Go(func() error {
			if err := m.create(ctx, obj.DeepCopy()); err != nil {
				errs[i] = err
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			entries = append(entries, changeSetEntry(obj, ssa.CreatedAction))
			return nil
		})
	}
	_ = g.Wait()
	return entries, errors.Join(errs...)
}

// createPrecondition is the resourceVersion that makes a server-side apply a
// create that fails when the object exists. An apply whose object carries a
// resourceVersion is refused with a Conflict unless the live object has that
// version, and creates the object when there is none (checked by
// TestCreate_applyWithPreconditionCreatesOnly against the API server). No
// object has version 1: etcd's first write is revision 2.
const createPrecondition = "1"

// create creates obj as a server-side apply with our field manager, so that
// its fields are our Apply entry's from the start (a field later removed
// from the set is removed by the next apply), with createPrecondition: an
// object that exists already is a *ClaimError, and nothing is written to
// it. An API server that refuses the precondition on a create (none we know
// of does) gets the two requests of createAndTake.
func (m *Manager) create(ctx context.Context, obj *unstructured.Unstructured) error {
	o := obj.DeepCopy()
	o.SetResourceVersion(createPrecondition)
	err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(m.fieldManager), client.ForceOwnership)
	switch {
	case err == nil:
		if m.obs != nil {
			// What the apply returned: the desired object applied.
			m.obs.set(ID(obj), observation{live: o})
		}
		return nil
	case apierrors.IsConflict(err):
		// With ForceOwnership a field conflict cannot be: the precondition
		// failed, so the object exists.
		return &ClaimError{ID: ID(obj), Object: Describe(obj), Obj: obj, Exists: true, Err: err}
	case apierrors.IsBadRequest(err) || apierrors.IsInvalid(err):
		return m.createAndTake(ctx, obj)
	}
	return fmt.Errorf("%s create failed: %w", Describe(obj), err)
}

// createAndTake creates obj with our field manager, then makes the fields it
// set our field manager's applied ones: a create records them under an
// Update entry, which a later server-side apply would not take back (a field
// removed from the set would stay). client-go's csaupgrade moves them, with
// the created resourceVersion as a precondition.
func (m *Manager) createAndTake(ctx context.Context, obj *unstructured.Unstructured) error {
	if err := m.client.Create(ctx, obj, client.FieldOwner(m.fieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return &ClaimError{ID: ID(obj), Object: Describe(obj), Obj: obj, Exists: true, Err: err}
		}
		return fmt.Errorf("%s create failed: %w", Describe(obj), err)
	}
	// Controllers write to new objects at once (a CRD's status, a
	// Deployment's): the patch is computed again from a fresh read when
	// the object changed under it.
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
		}
		first = false
		patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(m.fieldManager), m.fieldManager)
		if err != nil || patch == nil {
			return err
		}
		return m.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	})
	if err != nil {
		return fmt.Errorf("%s taking the created fields as applied failed: %w", Describe(obj), err)
	}
	if m.obs != nil {
		// Created from the desired object and its fields now applied by us:
		// what a server-side apply of it would have returned.
		m.obs.set(ID(obj), observation{live: obj.DeepCopy()})
	}
	return nil
}
