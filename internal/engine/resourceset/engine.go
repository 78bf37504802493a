package resourceset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Engine plans, applies, refreshes and deletes ResourceSets on one cluster.
type Engine struct {
	kube *kube.Factory
}

// New returns an engine on the provider's shared client factory.
func New(f *kube.Factory) *Engine { return &Engine{kube: f} }

// Condition is a kstatus-style condition of the set.
type Condition = kube.Condition

// Result is what a plan or an apply knows of the set.
type Result struct {
	// Inventory is the sorted list of objects the set owns in the cluster.
	Inventory []kube.Entry
	// Manifests are the rendered objects as multi-document YAML, Secret values
	// masked.
	Manifests string
	// Conditions is the Ready condition after an apply.
	Conditions []Condition
	// Undecided holds, after a plan, the IDs of the inventory entries whose
	// Adopted flag only the apply can decide.
	Undecided map[string]bool
	// Existing holds, after a plan, the IDs of the objects new to the
	// inventory that exist in the cluster (adopted, taken over, undecided).
	Existing map[string]bool
	// Warnings, after a plan, name what the render did that the user may not
	// expect (see desired).
	Warnings []Warning
	// Preview, after a plan with PlanOptions.Preview, is what the apply
	// would change, object by object (dry runs); nil when the plan made none:
	// the set is unchanged (PlanOptions.Unchanged), or Undecided lists
	// objects that the destroy coming first in the same apply changes.
	Preview *Preview
	// Steps maps the ID of each object the set renders to the name of its
	// step ("" without steps); an inventory entry that is not listed left
	// the set and awaits its prune. Nil when the set did not render.
	Steps map[string]string
	// InSync, after an apply, are the fingerprints of the objects it left in
	// sync (kube.ApplyResult.InSync: taken from what its own requests
	// returned, with no drift check of its own), so that the refresh of the
	// plans that follow dry-runs only the objects written since. Plans do not
	// save what their refresh found: without these, every plan until the next
	// apply would dry-run every object. An object without one is dry-run by
	// the next refresh.
	InSync kube.Fingerprints
}

// Warning is something a plan says about the rendered objects. Path is the
// attribute it is about, in fielderr's syntax (`resources[2]`,
// `steps[1].resources[0]`, `steps[1]`), "" for the set as a whole.
type Warning struct {
	Path    string
	Summary string
	Message string
}

// Error is the warning's message: the provider adds it as it adds an error
// (fielderr.Attributed), with its Summary.
func (w Warning) Error() string { return w.Message }

// AttributePath is Path (fielderr.Attributed).
func (w Warning) AttributePath() string { return w.Path }

func (e *Engine) factory(spec *Spec) (*kube.Factory, error) {
	if spec.ServiceAccountName == "" {
		return e.kube, nil
	}
	return e.kube.Impersonate(spec.Namespace, spec.ServiceAccountName)
}

// missingServiceAccount is an error on service_account_name when spec
// impersonates a service account that does not exist (one request, no
// retry: the impersonated requests would each be retried for
// kube.ForbiddenRetryWindow before their denial stands); nil otherwise.
func (e *Engine) missingServiceAccount(ctx context.Context, spec *Spec) error {
	if spec.ServiceAccountName == "" {
		return nil
	}
	if err := e.kube.CheckServiceAccount(ctx, spec.Namespace, spec.ServiceAccountName); err != nil {
		return fielderr.Wrap("service_account_name", err)
	}
	return nil
}

// manager is the resource manager of spec's requests, impersonating its
// service account if it names one.
func (e *Engine) manager(spec *Spec) (*kube.Manager, error) {
	f, err := e.factory(spec)
	if err != nil {
		return nil, err
	}
	return f.Manager()
}

// Desired renders the spec and defaults the namespaces of the rendered objects
// with the cluster's RESTMapper (a kind whose CRD is in the set needs no
// mapping). It reads discovery but writes nothing. With steps, the objects
// are in step order.
func (e *Engine) Desired(ctx context.Context, spec *Spec) ([]*unstructured.Unstructured, error) {
	spec = spec.withDefaults()
	parts, err := e.desiredParts(ctx, spec)
	return flatten(parts), objectError(spec, err)
}

// desiredParts is Desired step by step.
func (e *Engine) desiredParts(ctx context.Context, spec *Spec) ([]part, error) {
	spec, err := e.resolveInputs(ctx, spec)
	if err != nil {
		return nil, err
	}
	parts, _, err := e.desired(spec)
	return parts, err
}

// desired is Desired step by step, with what the plan warns about: template
// output read as another type, namespaces on cluster-scoped objects, objects
// rendered more than once in a step with different content. Invalid steps
// and an object that two steps render are *fielderr.Error on the step.
func (e *Engine) desired(spec *Spec) ([]part, []Warning, error) {
	if err := ValidateSteps(spec.Steps, len(spec.Resources) > 0 || spec.ResourcesTemplate != ""); err != nil {
		return nil, nil, err
	}
	parts := spec.parts()
	warnings := providerKeyWarnings(spec)
	for i := range parts {
		objs, ws, err := render(spec.forPart(parts[i]))
		if err != nil {
			return nil, nil, parts[i].wrap("", err)
		}
		parts[i].objs = objs
		warnings = append(warnings, inStep(ws, parts[i].index)...)
	}
	mapper, err := e.kube.RESTMapper()
	if err != nil {
		return nil, nil, err
	}
	// A kind whose CRD another step applies is known too.
	s := newScopes(mapper, flatten(parts))
	for i, p := range parts {
		ignored, err := defaultNamespaces(p.objs, s, spec.Namespace)
		if err != nil {
			if p.index < 0 && errors.Is(err, ErrUnknownKind) {
				err = fielderr.Wrap(spec.objectsAttribute(), err)
			}
			return nil, nil, p.wrap("", err)
		}
		warnings = append(warnings, inStep(ignored, p.index)...)
		warnings = append(warnings, inStep(duplicates(p.objs), p.index)...)
		parts[i].objs = finish(p.objs, spec)
	}
	if err := crossStepDuplicates(parts); err != nil {
		return nil, nil, err
	}
	return parts, warnings, nil
}

// objectsAttribute is the attribute of a set without steps that renders its
// objects: resources, unless only resources_template is set.
func (s *Spec) objectsAttribute() string {
	if len(s.Resources) == 0 && s.ResourcesTemplate != "" {
		return "resources_template"
	}
	return "resources"
}

// inStep locates warnings in the step at index (-1: none).
func inStep(warnings []Warning, index int) []Warning {
	if index < 0 {
		return warnings
	}
	for i, w := range warnings {
		warnings[i].Path = fielderr.Index("steps", index)
		if w.Path != "" {
			warnings[i].Path += "." + w.Path
		}
	}
	return warnings
}

// Plan returns the inventory and manifests an apply of spec will leave. prev
// is the inventory in state: its entries keep their Adopted flags, and only
// the objects new to it are read from the cluster, to show which the apply
// adopts (Result.Undecided lists those it cannot tell yet). An object owned by
// another set is an *OwnershipError. With opts.Preview it also dry-runs the
// apply (Result.Preview), from the same inputs of inputs_from as the render.
func (e *Engine) Plan(ctx context.Context, spec *Spec, prev []kube.Entry, opts PlanOptions) (*Result, error) {
	spec = spec.withDefaults()
	res, resolved, err := e.plan(ctx, spec, prev)
	if err == nil && opts.Preview {
		err = e.planPreview(ctx, resolved, prev, res, opts)
	}
	return res, objectError(spec, err)
}

// PlanOptions are what a plan is asked besides the spec and the inventory.
type PlanOptions struct {
	// Preview asks for the dry runs of the apply, when the set changes: a
	// steady plan makes none.
	Preview bool
	// Unchanged, when set, tells from the plan's result whether the set is
	// as the caller's state has it (which holds what the engine does not
	// see: the settings that do not show in the manifests); then the plan
	// makes no dry run.
	Unchanged func(*Result) bool
}

// planPreview sets res.Preview, unless the set is unchanged or objects are
// undecided. An object that the plan's look-up found missing but its dry run
// found there appeared while the plan ran (another apply created it): the
// plan is made again, which names its owner, or fails saying so; the same
// check at apply's final plan keeps that plan from disagreeing with the
// first.
func (e *Engine) planPreview(ctx context.Context, spec *Spec, prev []kube.Entry, res *Result, opts PlanOptions) error {
	if len(res.Undecided) > 0 || opts.Unchanged != nil && opts.Unchanged(res) {
		return nil
	}
	pv, err := e.preview(ctx, spec)
	if err != nil {
		return err
	}
	if pv.Unknown == "" {
		if appeared := appearedSincePlan(res, prev, pv.Changes); len(appeared) > 0 {
			// Planned as an update would be, so that an object of another
			// set is its owner's refusal (at a create's plan it is only a
			// warning), which names the owner.
			again := *spec
			again.Creating = false
			if _, _, err := e.plan(ctx, &again, prev); err != nil {
				return err
			}
			return fmt.Errorf("%s appeared while this plan ran (another apply created it); plan again", strings.Join(appeared, ", "))
		}
	}
	res.Preview = pv
	return nil
}

// appearedSincePlan lists the objects that res found missing (new to prev,
// not in the cluster at the look-up) but that the dry run found there.
func appearedSincePlan(res *Result, prev []kube.Entry, changes []kube.Drift) []string {
	known := map[string]bool{}
	for _, en := range prev {
		known[en.ID] = true
	}
	created := map[string]bool{}
	for _, en := range res.Inventory {
		if !known[en.ID] && !res.Existing[en.ID] && !res.Undecided[en.ID] {
			created[en.ID] = true
		}
	}
	var out []string
	for _, c := range changes {
		if c.Type == "update" && created[c.ID] {
			out = append(out, c.ID)
		}
	}
	return out
}

// plan is Plan without the dry runs; it returns the spec with its inputs of
// inputs_from read, for them.
func (e *Engine) plan(ctx context.Context, spec *Spec, prev []kube.Entry) (*Result, *Spec, error) {
	if err := kube.ValidateDependencies(spec.Dependencies); err != nil {
		return nil, nil, err
	}
	spec, err := e.resolveInputs(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	parts, warnings, err := e.desired(spec)
	if err != nil {
		return nil, nil, err
	}
	objs := flatten(parts)
	manifests, err := Manifests(objs)
	if err != nil {
		return nil, nil, err
	}
	var adopted, undecided, existing map[string]bool
	var owned []Warning
	if missing := e.missingServiceAccount(ctx, spec); missing != nil {
		// Nothing can be read as the service account: the new objects
		// are left for the apply to decide (which fails unless the service
		// account exists by then), and the plan says why, at once.
		warnings = append(warnings, Warning{Path: "service_account_name", Summary: "Service account not found",
			Message: missing.Error() + ": what the apply would change cannot be read, and the apply fails unless the service account is created first"})
		adopted, undecided = adoptionsOf(prev), map[string]bool{}
		for _, o := range newObjects(objs, adopted) {
			undecided[kube.ID(o)] = true
		}
	} else if adopted, undecided, existing, owned, err = e.planAdoption(ctx, spec, objs, prev); err != nil {
		return nil, nil, err
	}
	return &Result{Inventory: inventoryOf(objs, adopted), Manifests: manifests, Undecided: undecided, Existing: existing, Warnings: append(warnings, owned...),
		Steps: stepsOf(parts)}, spec, nil
}

// Apply waits for the dependencies, decides which objects new to the
// inventory it adopts, applies the set in stages, prunes the objects of prev
// that left it, and with spec.Wait waits for the objects. With steps, each
// step is applied in order, and the objects of each but the last are waited
// for (kstatus, the step's timeout) before the next starts; a step that fails
// is an error on its step (steps[i]) and stops the sequence before the prune.
// opts.Planned is what the plan showed of the new objects' adoption: an object
// that appeared or disappeared since fails the apply before anything is
// applied, as does an object owned by another set. So do inputs of
// inputs_from that changed since the plan (opts.PlannedDigest): a
// *StalePlanError on inputs_from. The result is never nil:
// after a failure its inventory holds what the cluster really has (applied
// objects, and stale ones not yet pruned), so that state can be saved and a
// second apply converges, and its Ready condition says why, without naming
// the set.
func (e *Engine) Apply(ctx context.Context, spec *Spec, prev []kube.Entry, opts ApplyOptions) (*Result, error) {
	spec = spec.withDefaults()
	res, err := e.apply(ctx, spec, prev, opts)
	return res, objectError(spec, err)
}

// ApplyOptions are what an apply knows of the set besides its spec and its
// inventory.
type ApplyOptions struct {
	// Planned are the adoption decisions the plan showed.
	Planned Adoptions
	// Since are the fingerprints of the objects found in sync by the last
	// drift check or apply (Result.InSync, kept in private state): an object
	// not written since is not applied again.
	Since kube.Fingerprints
	// PlannedDigest is the Digest of the manifests the plan showed; "" when
	// the plan could not show them. A set with inputs_from reads its
	// providers again at apply: when what it renders from them is not what
	// the plan showed, the apply refuses before anything.
	PlannedDigest string
}

// Digest is the digest of a set's manifests (Result.Manifests), which
// ApplyOptions.PlannedDigest takes.
func Digest(manifests string) string {
	sum := sha256.Sum256([]byte(manifests))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (e *Engine) apply(ctx context.Context, spec *Spec, prev []kube.Entry, opts ApplyOptions) (*Result, error) {
	res := &Result{Inventory: slices.Clone(prev), InSync: kube.Fingerprints{}}
	fail := func(reason string, err error) (*Result, error) {
		res.Conditions = []Condition{{Type: "Ready", Status: "False", Reason: reason, Message: err.Error()}}
		return res, err
	}

	deps, err := kube.CompileDependencies(spec.Dependencies)
	if err != nil {
		return fail(ReasonBuildFailed, err)
	}
	if spec, err = e.resolveInputs(ctx, spec); err != nil {
		return fail(ReasonBuildFailed, err)
	}
	parts, _, err := e.desired(spec)
	if err != nil {
		return fail(ReasonBuildFailed, err)
	}
	objs := flatten(parts)
	manifests, err := Manifests(objs)
	if err != nil {
		return fail(ReasonBuildFailed, err)
	}
	if opts.PlannedDigest != "" && len(spec.InputsFrom) > 0 && Digest(manifests) != opts.PlannedDigest {
		return fail(ReasonBuildFailed, fielderr.Wrap("inputs_from", &StalePlanError{Inputs: true}))
	}
	res.Steps, res.Manifests = stepsOf(parts), manifests
	if missing := e.missingServiceAccount(ctx, spec); missing != nil {
		return fail(ReasonReconciliationFailed, missing)
	}
	m, err := e.manager(spec)
	if err != nil {
		return fail(ReasonReconciliationFailed, err)
	}

	if err := deps.Wait(ctx, m.Client(), spec.Timeout, kube.DependencyPollInterval); err != nil {
		return fail(ReasonDependencyNotReady, err)
	}

	// Decided after the wait for dependencies, as close to the apply as
	// possible, for every step at once.
	adopted, claims, err := e.applyAdoption(ctx, m, spec, objs, prev, opts.Planned)
	if err != nil {
		return fail(ReasonReconciliationFailed, err)
	}
	desired := inventoryOf(objs, adopted)

	var applied []kube.Entry // the last step's
	for i, p := range parts {
		ar, applyErr := m.ApplyStaged(ctx, p.objs, kube.ApplyOptions{Force: spec.Force, WaitTimeout: p.timeout, Claims: claims,
			Since: opts.Since, Owner: ownerLabels(spec)})
		maps.Copy(res.InSync, ar.InSync)
		applyErr = e.claimLost(ctx, m, spec, applyErr)
		applied = entriesIn(desired, ar.ChangeSet, anyAction)
		res.Inventory = union(res.Inventory, applied)
		if applyErr != nil {
			// A stage that fails part way loses its change set; what reached
			// the cluster is what exists with our owner labels.
			res.Inventory = union(res.Inventory, ownedExisting(ctx, m, spec, p.objs, desired))
			return fail(ReasonReconciliationFailed, p.failed("apply failed", "apply", applyErr))
		}
		if i < len(parts)-1 && len(applied) > 0 {
			if err := waitFor(ctx, m, applied, p.timeout); err != nil {
				return fail(ReasonHealthCheckFailed, p.failed("health check failed", "wait", err))
			}
		}
	}

	remaining, pruneErr := prune(ctx, m, spec, subtract(prev, desired), spec.Timeout)
	res.Inventory = union(desired, remaining)
	if pruneErr != nil {
		return fail(ReasonReconciliationFailed, fmt.Errorf("prune: %w", pruneErr))
	}

	if last := parts[len(parts)-1]; spec.Wait && len(applied) > 0 {
		if err := waitFor(ctx, m, applied, last.timeout); err != nil {
			return fail(ReasonHealthCheckFailed, last.failed("health check failed", "wait", err))
		}
	}
	res.Conditions = []Condition{{Type: "Ready", Status: "True", Reason: ReasonSucceeded,
		Message: fmt.Sprintf("Applied %d objects", len(desired))}}
	return res, nil
}

// waitFor waits until entries are Current by kstatus (Jobs complete),
// failing early on a Failed object.
func waitFor(ctx context.Context, m *kube.Manager, entries []kube.Entry, timeout time.Duration) error {
	return m.WithCompleteJobs().Wait(ctx, entries, kube.WaitOptions{Interval: kube.PollInterval, Timeout: timeout, FailFast: true})
}

// Drift reports, for the objects the set renders and owns, how the cluster
// differs from them: edited fields and deleted objects.
func (e *Engine) Drift(ctx context.Context, spec *Spec, inventory []kube.Entry) ([]kube.Drift, error) {
	r, err := e.CheckDrift(ctx, spec, inventory, nil)
	if err != nil {
		return nil, err
	}
	return r.Drift, nil
}

// CheckDrift is Drift, which dry-runs only the objects whose fingerprint in
// since (the InSync of the last check) no longer matches: those written,
// deleted or recreated since, or whose desired state changed. It is the
// refresh's: it reads the objects from LISTs that the refreshes of the
// engine's factory share for kube.SharedListTTL, so it must not run after a
// write of the same factory (apply never calls it).
func (e *Engine) CheckDrift(ctx context.Context, spec *Spec, inventory []kube.Entry, since kube.Fingerprints) (*kube.DriftReport, error) {
	spec = spec.withDefaults()
	report, err := e.checkDrift(ctx, spec, inventory, since)
	return report, objectError(spec, err)
}

func (e *Engine) checkDrift(ctx context.Context, spec *Spec, inventory []kube.Entry, since kube.Fingerprints) (*kube.DriftReport, error) {
	parts, err := e.desiredParts(ctx, spec)
	if err != nil {
		return nil, err
	}
	objs := flatten(parts)
	owned := make(map[string]bool, len(inventory))
	for _, en := range inventory {
		owned[en.ID] = true
	}
	var check []*unstructured.Unstructured
	for _, o := range objs {
		if owned[kube.ID(o)] {
			check = append(check, o)
		}
	}
	if missing := e.missingServiceAccount(ctx, spec); missing != nil {
		return nil, missing
	}
	m, err := e.manager(spec)
	if err != nil {
		return nil, err
	}
	// A refresh: the objects with a fingerprint are read from the LISTs of
	// the objects of every set (their set-name label) that the refreshes of
	// this provider process share, one per kind and namespace.
	return m.CheckDrift(ctx, check, kube.DriftOptions{Since: since, SharedLabel: NameLabel})
}

// Delete prunes the whole inventory, as prune does: adopted objects stay in
// the cluster without the owner labels. It returns the entries it could not
// let go of.
func (e *Engine) Delete(ctx context.Context, spec *Spec, inventory []kube.Entry) ([]kube.Entry, error) {
	spec = spec.withDefaults()
	m, err := e.manager(spec)
	if err != nil {
		return inventory, objectError(spec, err)
	}
	remaining, err := prune(ctx, m, spec, inventory, spec.Timeout)
	return remaining, objectError(spec, err)
}

// fluxWaitTimeout bounds the wait for Flux objects to be finalized before the
// rest is deleted: their controllers need the rest (namespaces, service
// accounts) to clean up after themselves.
const fluxWaitTimeout = time.Minute

// prune lets go of the objects of stale. Adopted objects are not the set's to
// delete: they only lose the owner labels. The others are deleted if they
// carry the set's owner labels: Flux objects first (waiting for them to go),
// then the other objects, then cluster definitions (CRDs, Namespaces,
// ClusterRoles). Objects annotated prune: disabled are left as they are. It
// returns the entries whose objects it could not let go of.
func prune(ctx context.Context, m *kube.Manager, spec *Spec, stale []kube.Entry, timeout time.Duration) ([]kube.Entry, error) {
	if len(stale) == 0 {
		return nil, nil
	}
	var adopted, flux, rest, defs []kube.Entry
	for _, en := range stale {
		o, err := kube.ObjectOf(en)
		if err != nil {
			return stale, err
		}
		switch {
		case en.Adopted:
			adopted = append(adopted, en)
		case isFluxKind(o):
			flux = append(flux, en)
		case ssautils.IsClusterDefinition(o):
			defs = append(defs, en)
		default:
			rest = append(rest, en)
		}
	}
	exclusions := map[string]string{PruneAnnotation: DisabledValue}
	var remaining []kube.Entry
	var errs []error
	// What the set lets go of without deleting it, adopted objects and
	// objects annotated prune: disabled, loses the set's owner labels: it is
	// nobody's from then on, and another set (a new instance of this one
	// too) may adopt it.
	if len(adopted) > 0 {
		err := m.Disown(ctx, objectsOf(adopted), kube.DisownOptions{Owner: ownerLabels(spec), Annotations: []string{kube.AdoptedAnnotation}})
		if err != nil {
			errs = append(errs, err)
			remaining = append(remaining, adopted...)
		}
	}
	if kept := slices.Concat(flux, rest, defs); len(kept) > 0 {
		if err := m.Disown(ctx, objectsOf(kept), kube.DisownOptions{Owner: ownerLabels(spec), Only: exclusions}); err != nil {
			errs = append(errs, err)
		}
	}
	opts := kube.DeleteOptions{Inclusions: ownerLabels(spec), Exclusions: exclusions}
	for i, stage := range [][]kube.Entry{flux, rest, defs} {
		if len(stage) == 0 {
			continue
		}
		cs, err := m.Delete(ctx, objectsOf(stage), opts)
		if err != nil {
			errs = append(errs, err)
			remaining = append(remaining, stage...)
			continue
		}
		wait := timeout
		if i == 0 && wait > fluxWaitTimeout {
			wait = fluxWaitTimeout
		}
		if err := m.ResourceManager().WaitForSetTermination(cs, ssa.WaitOptions{Interval: time.Second, Timeout: wait}); err != nil {
			errs = append(errs, fmt.Errorf("waiting for deleted objects to go: %w", err))
			remaining = append(remaining, entriesIn(stage, cs, deletedAction)...)
		}
	}
	kube.SortEntries(remaining)
	return remaining, errors.Join(errs...)
}

// objectsOf returns objects carrying the identities of entries, which parse:
// prune checked them.
func objectsOf(entries []kube.Entry) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(entries))
	for _, en := range entries {
		if o, err := kube.ObjectOf(en); err == nil {
			out = append(out, o)
		}
	}
	return out
}

func isFluxKind(o *unstructured.Unstructured) bool {
	g := o.GroupVersionKind().Group
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == "fluxcd.controlplane.io"
}

// entriesIn returns the entries that the change set lists with an action keep
// accepts.
func entriesIn(entries []kube.Entry, cs *ssa.ChangeSet, keep func(ssa.Action) bool) []kube.Entry {
	if cs == nil {
		return nil
	}
	listed := map[string]bool{}
	for _, en := range cs.Entries {
		if keep(en.Action) {
			listed[en.ObjMetadata.String()] = true
		}
	}
	var out []kube.Entry
	for _, en := range entries {
		if listed[en.ID] {
			out = append(out, en)
		}
	}
	return out
}

func anyAction(ssa.Action) bool       { return true }
func deletedAction(a ssa.Action) bool { return a == ssa.DeletedAction }

// ownedExisting returns the entries of desired (the inventory of objs) whose
// objects exist in the cluster with this set's owner labels.
func ownedExisting(ctx context.Context, m *kube.Manager, spec *Spec, objs []*unstructured.Unstructured, desired []kube.Entry) []kube.Entry {
	live, _ := m.Lookup(ctx, objs)
	owned := map[string]bool{}
	for i, o := range objs {
		if live[i] == nil {
			continue
		}
		if owns(spec, kube.OwnerOf(live[i].GetLabels(), nil)) {
			owned[kube.ID(o)] = true
		}
	}
	var out []kube.Entry
	for _, en := range desired {
		if owned[en.ID] {
			out = append(out, en)
		}
	}
	return out
}

// union merges entry lists by ID, the first list's entry (version, adoption)
// winning, sorted.
func union(a, b []kube.Entry) []kube.Entry {
	seen := map[string]bool{}
	var out []kube.Entry
	for _, l := range [][]kube.Entry{a, b} {
		for _, en := range l {
			if !seen[en.ID] {
				seen[en.ID] = true
				out = append(out, en)
			}
		}
	}
	kube.SortEntries(out)
	return out
}

// subtract returns the entries of a whose IDs are not in b.
func subtract(a, b []kube.Entry) []kube.Entry {
	in := map[string]bool{}
	for _, en := range b {
		in[en.ID] = true
	}
	var out []kube.Entry
	for _, en := range a {
		if !in[en.ID] {
			out = append(out, en)
		}
	}
	return out
}

// Manifests serializes objects as multi-document YAML with Secret values
// masked: the manifests go into Terraform state and plan output.
func Manifests(objs []*unstructured.Unstructured) (string, error) {
	var b strings.Builder
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		c := o
		if _, ok := o.GetLabels()[kube.OwnerLabel]; ok {
			// The owner ID is not known at the plan of a create: the
			// manifests leave it out, so that plan and apply agree.
			c = o.DeepCopy()
			l := c.GetLabels()
			delete(l, kube.OwnerLabel)
			c.SetLabels(l)
		}
		if o.GetKind() == "Secret" && o.GroupVersionKind().Group == "" {
			c = c.DeepCopy()
			for _, field := range []string{"data", "stringData"} {
				if m, ok := c.Object[field].(map[string]any); ok {
					for k := range m {
						m[k] = "***"
					}
				}
			}
		}
		y, err := yaml.Marshal(c.Object)
		if err != nil {
			return "", fmt.Errorf("%s: %w", describe(o), err)
		}
		b.Write(y)
	}
	return b.String(), nil
}
