package resourceset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Adoptions are the adoption decisions a plan showed for the objects new to
// the inventory, by inventory ID: true for an object the apply adopts, false
// for one it creates. An ID that is missing had no decision at plan (unknown
// inputs, an object that already carried this set's owner labels): the apply
// decides it alone.
type Adoptions map[string]bool

// OwnershipError is an object of the set that belongs to someone else: another
// stevedore resource set or release (another instance of this one included,
// in another configuration that reuses its name), a Helm release, Flux or
// flux-operator. Two owners of one object undo each other's applies and one
// deletes it under the other, so the set refuses it, unless take_over_from
// names the owner's kind. Plan and Apply return it inside a *fielderr.Error
// on the part of the spec that renders the object: `resources`,
// `resources_template` or `steps`.
type OwnershipError struct {
	// ID is the object's inventory ID.
	ID string
	// Object names the object as kube.Describe does: `Kind/namespace/name`.
	Object string
	// Owner is who the object belongs to.
	Owner kube.Owner
	// Namesake says the owner is a set of this set's name and namespace, in
	// another configuration or a killed create of this one.
	Namesake bool
	// ImportID imports the set of this name (with Namesake).
	ImportID string
	// Raced says the owner took the object while this apply was taking it.
	Raced bool
	// Others are the other objects refused for the same cause (the same
	// owner, on the same attribute), named as Object is: one error names the
	// cause, and the import ID, once (oneErrorPerCause).
	Others []string
}

func (e *OwnershipError) Error() string {
	objects, is, it := e.Object, "is", "it"
	if len(e.Others) > 0 {
		objects = fmt.Sprintf("%d objects (%s)", 1+len(e.Others), strings.Join(append([]string{e.Object}, e.Others...), ", "))
		is, it = "are", "them"
	}
	msg := fmt.Sprintf("%s %s owned by %s", objects, is, e.Owner)
	if e.Raced {
		msg = fmt.Sprintf("%s %s taken by %s while this apply was taking %s; this apply wrote nothing to %s", objects, map[string]string{"is": "was", "are": "were"}[is], e.Owner, it, it)
	}
	switch {
	case e.Namesake:
		return msg + fmt.Sprintf(", another instance of a set of this name: two configurations reuse the name, or an apply of this set "+
			"was killed before it saved state. Give one of them another name, or, if this configuration is the owner, import it with the ID %q", e.ImportID)
	case e.Owner.TakeOver() != "":
		return msg + fmt.Sprintf("; remove it from the set, or, to take it over (a migration), add %q to take_over_from", e.Owner.TakeOver())
	case e.Owner.Kind == kube.OwnedBySet:
		return msg + "; remove it from one of the sets"
	}
	return msg + "; remove it from the set"
}

// StalePlanError is an object that appeared or disappeared between the plan
// and the apply. The plan said whether the apply creates or adopts it; acting
// on the changed cluster would take over an object the plan said it would
// create, or record as created one it said it would adopt, so the apply
// refuses to start. It is about the cluster, not an attribute; with Inputs,
// it is the inputs of inputs_from that changed, and Apply returns it on
// inputs_from.
type StalePlanError struct {
	// Object names the object as kube.Describe does.
	Object string
	// Exists says whether the object exists now.
	Exists bool
	// Inputs says that the exported inputs of inputs_from changed since the
	// plan, so that the objects to apply are not those the plan showed.
	Inputs bool
}

func (e *StalePlanError) Error() string {
	if e.Inputs {
		return "the exported inputs of the ResourceSetInputProviders of inputs_from changed between plan and apply, " +
			"so the objects to apply are not those the plan showed; nothing was applied. Plan again."
	}
	if e.Exists {
		return fmt.Sprintf("%s exists now, but did not when the plan said the apply would create it; plan again", e.Object)
	}
	return fmt.Sprintf("%s no longer exists, but did when the plan said the apply would adopt it; plan again", e.Object)
}

// ownerLabels are the labels that mark the objects of spec's set: its name
// and namespace, and its instance's owner ID when it has one.
func ownerLabels(spec *Spec) map[string]string {
	l := map[string]string{NameLabel: spec.Name, NamespaceLabel: spec.Namespace}
	if spec.Owner != "" {
		l[kube.OwnerLabel] = spec.Owner
	}
	return l
}

// namesake reports whether own is a set of spec's name and namespace.
func namesake(spec *Spec, own kube.Owner) bool {
	return own.Kind == kube.OwnedBySet && own.Name == spec.Name && own.Namespace == spec.Namespace
}

// owns reports whether own is spec's instance: a set of its name whose owner
// ID is the instance's. A set without an owner ID (a state written before
// owners were recorded) owns the objects of its name that carry none.
func owns(spec *Spec, own kube.Owner) bool {
	return namesake(spec, own) && own.ID == spec.Owner && !spec.Creating
}

// ImportID is the import ID of the set spec names.
func ImportID(spec *Spec) string { return spec.Namespace + "/" + spec.Name }

// adoption is the decision for an object new to the inventory.
type adoption struct {
	adopted bool
	// decided is false when only the apply can tell: the plan of a create
	// that finds objects of a set of its name (see adoptionOf).
	decided bool
	// takenFrom is the owner the object is taken over from (take_over_from).
	takenFrom *kube.Owner
}

// adoptionOf is the adoption rule for an object new to the inventory, given its
// live metadata (nil when it does not exist):
//   - an object that does not exist is created;
//   - one that belongs to nobody is adopted, as Flux adopts it: the set never
//     deletes it;
//   - one that carries this instance's owner ID was applied by an apply of
//     this set that saved no state for it (killed part way): it is adopted
//     when its adoption record says so, else the set's. One of a set made
//     before owners were recorded is undecided at plan and adopted: only the
//     apply can tell whether the set made it, and it never deletes what it
//     cannot prove it made;
//   - one of a set of this name and namespace under another owner, at the plan
//     of a create (no owner ID yet), is undecided: it may be another
//     configuration's, or the failed create of this set that Terraform is
//     replacing, whose destroy runs first. The apply, which has an owner ID,
//     refuses it;
//   - one whose owner take_over_from names is taken over: the set owns it from
//     then on, and prune and destroy delete it;
//   - anything else is an *OwnershipError.
func adoptionOf(spec *Spec, o *unstructured.Unstructured, live *metav1.PartialObjectMetadata) (adoption, error) {
	if live == nil {
		return adoption{decided: true}, nil
	}
	own := kube.OwnerOf(live.GetLabels(), live.GetAnnotations())
	switch {
	case own.Kind == kube.OwnedByNobody:
		return adoption{adopted: true, decided: true}, nil
	case owns(spec, own) && spec.Owner != "":
		// Applied by this instance in an apply that saved no state for it
		// (killed part way): what its adoption record says.
		return adoption{adopted: live.GetAnnotations()[kube.AdoptedAnnotation] == spec.Owner, decided: true}, nil
	case owns(spec, own):
		return adoption{adopted: true}, nil
	case namesake(spec, own) && spec.Creating:
		return adoption{adopted: true}, nil
	case own.TakeOver() != "" && slices.Contains(spec.TakeOverFrom, own.TakeOver()):
		return adoption{decided: true, takenFrom: &own}, nil
	}
	return adoption{}, &OwnershipError{ID: kube.ID(o), Object: kube.Describe(o), Owner: own, Namesake: namesake(spec, own), ImportID: ImportID(spec)}
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
// reads them again before applying anything); existing, those the look-up
// found. Objects that belong to someone else are an error; the warnings name
// the objects taken over, and those of a set of this name that the apply
// refuses unless this plan replaces it.
func (e *Engine) planAdoption(ctx context.Context, spec *Spec, objs []*unstructured.Unstructured, prev []kube.Entry) (adopted, undecided, existing map[string]bool, warnings []Warning, err error) {
	adopted = adoptionsOf(prev)
	undecided, existing = map[string]bool{}, map[string]bool{}
	fresh := newObjects(objs, adopted)
	if len(fresh) == 0 {
		return adopted, undecided, existing, nil, nil
	}
	m, err := e.manager(spec)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	live, errs := m.Lookup(ctx, fresh)
	var conflicts, otherSets []error
	var takenOver, namesakes []string
	for i, o := range fresh {
		id := kube.ID(o)
		if errs[i] != nil {
			undecided[id] = true
			continue
		}
		if live[i] != nil {
			existing[id] = true
		}
		a, err := adoptionOf(spec, o, live[i])
		switch {
		case err != nil && spec.Creating && otherSet(err):
			undecided[id] = true
			otherSets = append(otherSets, e.locate(ctx, spec, err))
		case err != nil:
			conflicts = append(conflicts, e.locate(ctx, spec, err))
		case a.decided:
			adopted[id] = a.adopted
			if a.takenFrom != nil {
				takenOver = append(takenOver, kube.Describe(o)+" from "+a.takenFrom.String())
			}
		default:
			undecided[id] = true
			if own := kube.OwnerOf(live[i].GetLabels(), nil); namesake(spec, own) && !owns(spec, own) {
				namesakes = append(namesakes, kube.Describe(o)+" of "+own.String())
			}
		}
	}
	if len(takenOver) > 0 {
		warnings = append(warnings, Warning{Path: spec.objectsAttribute(), Summary: "Objects taken over",
			Message: fmt.Sprintf("take_over_from lets the apply take over %d object(s) that belong to another tool: %s. "+
				"From then on they are this set's: they lose no labels of their old owner, and prune and destroy delete them. "+
				"Make sure the old owner no longer applies or deletes them.", len(takenOver), strings.Join(takenOver, ", "))})
	}
	if len(namesakes) > 0 {
		warnings = append(warnings, Warning{Path: spec.objectsAttribute(), Summary: "Objects of another set of this name",
			Message: fmt.Sprintf("%d object(s) carry the owner labels of a stevedore_resourceset named %s under another owner: %s. "+
				"Apply refuses them and changes nothing, unless Terraform replaces this resource (the plan says it \"must be replaced\"): "+
				"then the resource's destroy lets go of them first. If they are this configuration's (an apply of this set was killed "+
				"before it saved state), import the set with the ID %q.", len(namesakes), ImportID(spec), strings.Join(namesakes, ", "), ImportID(spec))})
	}
	for _, err := range oneErrorPerCause(otherSets) {
		var oe *OwnershipError
		errors.As(err, &oe)
		warnings = append(warnings, Warning{Path: fielderr.PathOf(err), Summary: "Objects of another set",
			Message: oe.Error() + ". Apply refuses this create and changes nothing; nothing is saved, so a destroy has nothing to undo."})
	}
	return adopted, undecided, existing, warnings, errors.Join(oneErrorPerCause(conflicts)...)
}

// otherSet reports whether err is an object of another stevedore set (not one
// of this set's name). At the plan of a create it is a warning, and the apply
// refuses it, as a release's create over another's release: a create that
// lost a race for an object to another set leaves the CLI a resource with no
// instance, whose destroy plans the create again before it destroys nothing,
// and must not fail.
func otherSet(err error) bool {
	var oe *OwnershipError
	return errors.As(err, &oe) && oe.Owner.Kind == kube.OwnedBySet && !oe.Namesake
}

// oneErrorPerCause merges the *OwnershipError of errs that have one cause
// (the same owner) into the first of them, which then names every object,
// their count, and the cause and its advice once: the re-apply of a killed
// create meets each object of the set under the killed apply's owner ID.
// The merged error stays on its attribute when all its objects are on one;
// else it is about the set. Other errors are kept as they are, in order.
func oneErrorPerCause(errs []error) []error {
	type cause struct {
		owner           kube.Owner
		namesake, raced bool
	}
	type group struct {
		index int
		first *OwnershipError
		path  string
		mixed bool
	}
	groups := map[cause]*group{}
	var out []error
	for _, err := range errs {
		var oe *OwnershipError
		if !errors.As(err, &oe) {
			out = append(out, err)
			continue
		}
		c := cause{oe.Owner, oe.Namesake, oe.Raced}
		if g, ok := groups[c]; ok {
			g.first.Others = append(g.first.Others, oe.Object)
			g.mixed = g.mixed || fielderr.PathOf(err) != g.path
			continue
		}
		groups[c] = &group{index: len(out), first: oe, path: fielderr.PathOf(err)}
		out = append(out, err)
	}
	for _, g := range groups {
		if g.mixed {
			out[g.index] = g.first
		}
	}
	return out
}

// applyAdoption decides, from the cluster as it is now, whether the apply
// adopts or creates each object of objs that prev does not list, and returns
// the Adopted flag of every object of objs (the listed ones keep theirs), and
// the claims that make the apply of the new objects atomic: each object to
// create must not exist when it is created, and each object to adopt or take
// over must not have changed since it was read here. It fails, before
// anything is applied, on objects that belong to someone else, on objects it
// cannot read, and on objects whose existence changed since the plan decided
// them.
func (e *Engine) applyAdoption(ctx context.Context, m *kube.Manager, spec *Spec, objs []*unstructured.Unstructured, prev []kube.Entry, planned Adoptions) (map[string]bool, kube.Claims, error) {
	adopted := adoptionsOf(prev)
	fresh := newObjects(objs, adopted)
	if len(fresh) == 0 {
		return adopted, nil, nil
	}
	live, errs := m.Lookup(ctx, fresh)
	claims := make(kube.Claims, len(fresh))
	var bad []error
	for i, o := range fresh {
		if errs[i] != nil {
			bad = append(bad, errs[i])
			continue
		}
		a, err := adoptionOf(spec, o, live[i])
		if err != nil {
			bad = append(bad, e.locate(ctx, spec, err))
			continue
		}
		id := kube.ID(o)
		if want, ok := planned[id]; ok && want != a.adopted && a.takenFrom == nil {
			bad = append(bad, &StalePlanError{Object: kube.Describe(o), Exists: live[i] != nil})
			continue
		}
		adopted[id] = a.adopted
		switch {
		case live[i] == nil:
			claims[id] = kube.Claim{Create: true}
		case owns(spec, kube.OwnerOf(live[i].GetLabels(), nil)):
		case a.adopted && spec.Owner != "":
			// Recorded on the object before anything else is written, so
			// that an import after a killed apply still knows the set did
			// not create it.
			claims[id] = kube.Claim{ResourceVersion: live[i].GetResourceVersion(), Annotations: map[string]string{kube.AdoptedAnnotation: spec.Owner}}
		default:
			claims[id] = kube.Claim{ResourceVersion: live[i].GetResourceVersion()}
		}
	}
	return adopted, claims, errors.Join(oneErrorPerCause(bad)...)
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

// claimLost names the winner of a claim the apply lost (a *kube.ClaimError
// in err): the object's owner now, as an *OwnershipError on the part of the
// spec that renders it, or a *StalePlanError when nobody owns it (it was
// created, or changed, by a tool that labels nothing). Other errors are
// returned as they are.
func (e *Engine) claimLost(ctx context.Context, m *kube.Manager, spec *Spec, err error) error {
	var ce *kube.ClaimError
	if !errors.As(err, &ce) {
		return err
	}
	live, errs := m.Lookup(ctx, []*unstructured.Unstructured{ce.Obj})
	if errs[0] != nil || live[0] == nil {
		return err
	}
	own := kube.OwnerOf(live[0].GetLabels(), live[0].GetAnnotations())
	if own.Kind == kube.OwnedByNobody {
		return &StalePlanError{Object: ce.Object, Exists: true}
	}
	return e.locate(ctx, spec, &OwnershipError{ID: ce.ID, Object: ce.Object, Owner: own, Namesake: namesake(spec, own), ImportID: ImportID(spec), Raced: true})
}

// appliedBy is the objects of objs that manager applied server-side, when
// any: controllers copy labels from the objects the set applies onto objects
// of their own (the Endpoints and EndpointSlices of a Service), which are not
// the set's. When none is (the objects were applied under another field
// manager), objs.
func appliedBy(objs []*metav1.PartialObjectMetadata, manager string) []*metav1.PartialObjectMetadata {
	var out []*metav1.PartialObjectMetadata
	for _, o := range objs {
		if kube.AppliedEntry(o.GetManagedFields(), manager) != nil {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return objs
	}
	return out
}

// Imported is what Import finds of a set in the cluster.
type Imported struct {
	// Inventory lists the objects that carry the set's owner labels, adopted
	// when their adoption record names the owner.
	Inventory []kube.Entry
	// Owner is the owner ID the objects carry, "" for a set made before
	// owners were recorded.
	Owner string
	// Objects are the objects of Inventory, in its order, as `resources`
	// entries that apply them unchanged (ConfigObject): what the set's
	// field manager applied, without the namespace when it is the set's.
	Objects []map[string]any
}

// NotFoundError is an import that found nothing: no object carries the
// labels of the stevedore set Namespace/Name, or (FluxOperator) there is no
// flux-operator ResourceSet of that name. Candidates are the import IDs of
// the sets the namespace holds; Unlisted says that they could not be listed.
type NotFoundError struct {
	Namespace, Name string
	FluxOperator    bool
	Candidates      []string
	Unlisted        bool
}

func (e *NotFoundError) Error() string {
	what := fmt.Sprintf("no object in the cluster carries the owner labels of set %s/%s", e.Namespace, e.Name)
	if e.FluxOperator {
		what = fmt.Sprintf("no flux-operator ResourceSet %s/%s", e.Namespace, e.Name)
	}
	if e.Unlisted {
		return what
	}
	if len(e.Candidates) == 0 {
		return fmt.Sprintf("%s, and no resource set in namespace %s to import", what, e.Namespace)
	}
	return fmt.Sprintf("%s; the resource sets of namespace %s import by the IDs %s", what, e.Namespace, strings.Join(e.Candidates, ", "))
}

// Import finds the objects of the set name in namespace, in every kind the
// cluster serves, to bring them under a resource that has no state for them:
// after an apply of the set was killed before it saved state, its objects
// carry its name and owner ID, and only an import can prove them its own.
// The objects of one set instance are imported; objects of a set of this name
// under several owner IDs (two configurations) are an error.
func (e *Engine) Import(ctx context.Context, namespace, name string) (*Imported, error) {
	spec := &Spec{Name: name, Namespace: namespace}
	objs, err := e.kube.ListLabelled(ctx, map[string]string{NameLabel: name, NamespaceLabel: namespace})
	if err != nil {
		return nil, objectError(spec, err)
	}
	if len(objs) == 0 {
		return nil, objectError(spec, e.notFound(ctx, namespace, name, false))
	}
	objs = appliedBy(objs, e.kube.FieldManager())
	owners := map[string][]string{}
	for _, o := range objs {
		id := o.GetLabels()[kube.OwnerLabel]
		owners[id] = append(owners[id], kube.IDOfMetadata(o))
	}
	if len(owners) > 1 {
		var desc []string
		for id, objs := range owners {
			if id == "" {
				id = "none"
			}
			desc = append(desc, fmt.Sprintf("owner %s: %d object(s), such as %s", id, len(objs), objs[0]))
		}
		slices.Sort(desc)
		return nil, objectError(spec, fmt.Errorf("the objects of this set's name belong to %d instances, so the import cannot tell which are this one's (%s); "+
			"rename one of the configurations' sets", len(owners), strings.Join(desc, "; ")))
	}
	imp := &Imported{}
	for id := range owners {
		imp.Owner = id
	}
	for _, o := range objs {
		imp.Inventory = append(imp.Inventory, kube.Entry{ID: kube.IDOfMetadata(o), V: o.GroupVersionKind().Version,
			Adopted: imp.Owner == "" || o.GetAnnotations()[kube.AdoptedAnnotation] == imp.Owner})
	}
	kube.SortEntries(imp.Inventory)
	byID := make(map[string]*metav1.PartialObjectMetadata, len(objs))
	for _, o := range objs {
		byID[kube.IDOfMetadata(o)] = o
	}
	c, err := e.kube.Client()
	if err != nil {
		return nil, objectError(spec, err)
	}
	manager := e.kube.FieldManager()
	for _, en := range imp.Inventory {
		md := byID[en.ID]
		// Read in the version the set applied, which its field set names.
		apiVersion := md.APIVersion
		if a := kube.AppliedEntry(md.GetManagedFields(), manager); a != nil && a.APIVersion != "" {
			apiVersion = a.APIVersion
		}
		live := &unstructured.Unstructured{}
		live.SetAPIVersion(apiVersion)
		live.SetKind(md.Kind)
		if err := c.Get(ctx, client.ObjectKey{Namespace: md.GetNamespace(), Name: md.GetName()}, live); err != nil {
			return nil, objectError(spec, fmt.Errorf("read %s: %w", en.ID, err))
		}
		obj, err := ConfigObject(live, manager)
		if err != nil {
			return nil, objectError(spec, err)
		}
		if md, _ := obj["metadata"].(map[string]any); md["namespace"] == namespace {
			delete(md, "namespace") // the set's namespace is the default
		}
		imp.Objects = append(imp.Objects, obj)
	}
	return imp, nil
}
