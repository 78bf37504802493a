package resourceset

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Adoptions are the adoption decisions a plan showed for the objects new to
// the inventory, by inventory ID: true for an object the apply adopts, false
// for one it creates. An ID that is missing had no decision at plan (unknown
// inputs, an object that already carried this set's owner labels): the apply
// decides it alone.
type Adoptions map[string]bool

// OwnershipError is an object of the set that carries another set's owner
// labels. Two sets owning one object would undo each other's applies and one
// would delete it under the other, so the set refuses it. Plan and Apply
// return it inside a *fielderr.Error on the part of the spec that renders the
// object: `resources`, `resources_template` or `steps`.
type OwnershipError struct {
	// ID is the object's inventory ID.
	ID string
	// Object names the object as kube.Describe does: `Kind/namespace/name`.
	Object string
	// Owner is the owning set, `namespace/name`.
	Owner string
}

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("%s is owned by resourceset %s; remove it from one of the sets", e.Object, e.Owner)
}

// StalePlanError is an object that appeared or disappeared between the plan
// and the apply. The plan said whether the apply creates or adopts it; acting
// on the changed cluster would take over an object the plan said it would
// create, or record as created one it said it would adopt, so the apply
// refuses to start. It is about the cluster, not an attribute.
type StalePlanError struct {
	// Object names the object as kube.Describe does.
	Object string
	// Exists says whether the object exists now.
	Exists bool
}

func (e *StalePlanError) Error() string {
	if e.Exists {
		return fmt.Sprintf("%s exists now, but did not when the plan said the apply would create it; plan again", e.Object)
	}
	return fmt.Sprintf("%s no longer exists, but did when the plan said the apply would adopt it; plan again", e.Object)
}

// ownerLabels are the labels that mark the objects of spec's set.
func ownerLabels(spec *Spec) map[string]string {
	return map[string]string{NameLabel: spec.Name, NamespaceLabel: spec.Namespace}
}

type ownership int

const (
	unowned ownership = iota
	ownedBySet
	ownedByOther
)

// ownershipOf reads the owner labels of an object: whether it belongs to no
// set, to spec's, or to another, which it names as `namespace/name`. One owner
// label alone is enough to name an owner: whoever wrote it meant the object to
// be a set's.
func ownershipOf(spec *Spec, labels map[string]string) (ownership, string) {
	name, hasName := labels[NameLabel]
	ns, hasNS := labels[NamespaceLabel]
	switch {
	case !hasName && !hasNS:
		return unowned, ""
	case name == spec.Name && ns == spec.Namespace:
		return ownedBySet, ""
	default:
		return ownedByOther, ns + "/" + name
	}
}

// adoptionOf is the adoption rule for an object new to the inventory, given its
// live metadata (nil when it does not exist). An object that exists already is
// adopted, whoever made it: the set never deletes what it cannot prove it
// created. decided is false for an object that already carries this set's
// owner labels: an apply that left no state put them there (a killed apply, the
// failed create of a set now being replaced, whose destroy runs between the
// plan and the apply and may delete the object), so only the apply can tell.
// An object owned by another set is an error.
func adoptionOf(spec *Spec, o *unstructured.Unstructured, live *metav1.PartialObjectMetadata) (adopted, decided bool, err error) {
	if live == nil {
		return false, true, nil
	}
	switch own, owner := ownershipOf(spec, live.GetLabels()); own {
	case ownedByOther:
		return false, false, &OwnershipError{ID: kube.ID(o), Object: kube.Describe(o), Owner: owner}
	case ownedBySet:
		return true, false, nil
	}
	return true, true, nil
}

// newObjects returns the objects of objs whose IDs known lacks.
func newObjects(objs []*unstructured.Unstructured, known map[string]bool) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if _, ok := known[kube.ID(o)]; !ok {
			out = append(out, o)
		}
	}
	return out
}

// adoptionsOf maps the IDs of entries to their Adopted flags.
func adoptionsOf(entries []kube.Entry) map[string]bool {
	out := make(map[string]bool, len(entries))
	for _, en := range entries {
		out[en.ID] = en.Adopted
	}
	return out
}

// planAdoption returns the Adopted flags of the objects of objs: those prev
// lists keep theirs without a request, and those new to it are read from the
// cluster to tell what an apply would decide now. undecided lists the new
// objects only the apply can decide, also those that cannot be read (the apply
// reads them again before applying anything). Objects owned by another set are
// an error.
func (e *Engine) planAdoption(ctx context.Context, spec *Spec, objs []*unstructured.Unstructured, prev []kube.Entry) (adopted, undecided map[string]bool, err error) {
	adopted = adoptionsOf(prev)
	undecided = map[string]bool{}
	fresh := newObjects(objs, adopted)
	if len(fresh) == 0 {
		return adopted, undecided, nil
	}
	m, err := e.manager(spec)
	if err != nil {
		return nil, nil, err
	}
	live, errs := m.Lookup(ctx, fresh)
	var conflicts []error
	for i, o := range fresh {
		id := kube.ID(o)
		if errs[i] != nil {
			undecided[id] = true
			continue
		}
		a, decided, err := adoptionOf(spec, o, live[i])
		switch {
		case err != nil:
			conflicts = append(conflicts, e.locate(ctx, spec, err))
		case decided:
			adopted[id] = a
		default:
			undecided[id] = true
		}
	}
	return adopted, undecided, errors.Join(conflicts...)
}

// applyAdoption decides, from the cluster as it is now, whether the apply
// adopts or creates each object of objs that prev does not list, and returns
// the Adopted flag of every object of objs (the listed ones keep theirs). It
// fails, before anything is applied, on objects owned by another set, on
// objects it cannot read, and on objects whose existence changed since the plan
// decided them.
func (e *Engine) applyAdoption(ctx context.Context, m *kube.Manager, spec *Spec, objs []*unstructured.Unstructured, prev []kube.Entry, planned Adoptions) (map[string]bool, error) {
	adopted := adoptionsOf(prev)
	fresh := newObjects(objs, adopted)
	if len(fresh) == 0 {
		return adopted, nil
	}
	live, errs := m.Lookup(ctx, fresh)
	var bad []error
	for i, o := range fresh {
		if errs[i] != nil {
			bad = append(bad, errs[i])
			continue
		}
		a, _, err := adoptionOf(spec, o, live[i])
		if err != nil {
			bad = append(bad, e.locate(ctx, spec, err))
			continue
		}
		id := kube.ID(o)
		if want, ok := planned[id]; ok && want != a {
			bad = append(bad, &StalePlanError{Object: kube.Describe(o), Exists: a})
			continue
		}
		adopted[id] = a
	}
	return adopted, errors.Join(bad...)
}

// inventoryOf returns the inventory of objs with the Adopted flags of adopted.
func inventoryOf(objs []*unstructured.Unstructured, adopted map[string]bool) []kube.Entry {
	inv := kube.Inventory(objs)
	for i := range inv {
		inv[i].Adopted = adopted[inv[i].ID]
	}
	return inv
}

// attributeOf names the part of spec that renders the object id. resources
// win over resources_template on duplicates, so an object that resources
// render alone is theirs. Only error paths call it: it renders again.
func (e *Engine) attributeOf(ctx context.Context, spec *Spec, id string) string {
	if len(spec.Steps) > 0 {
		return "steps"
	}
	if len(spec.Resources) == 0 {
		return "resources_template"
	}
	if spec.ResourcesTemplate == "" {
		return "resources"
	}
	only := *spec
	only.ResourcesTemplate = ""
	objs, err := e.Desired(ctx, &only)
	if err != nil {
		return "resources"
	}
	for _, o := range objs {
		if kube.ID(o) == id {
			return "resources"
		}
	}
	return "resources_template"
}

// locate puts an ownership error on the part of spec that renders the
// object.
func (e *Engine) locate(ctx context.Context, spec *Spec, err error) error {
	var oe *OwnershipError
	if errors.As(err, &oe) {
		return fielderr.Wrap(e.attributeOf(ctx, spec, oe.ID), err)
	}
	return err
}
