package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"github.com/go-openapi/jsonpointer"
	wjsondiff "github.com/wI2L/jsondiff"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Manager applies, diffs, deletes and waits for objects with server-side apply.
// It is a thin layer over fluxcd/pkg/ssa that adds the drift report the engines
// put into Terraform state.
type Manager struct {
	rm           *ssa.ResourceManager
	client       client.Client
	mapper       meta.RESTMapper
	fieldManager string
	shared       *sharedLists
	poller       *polling.StatusPoller
	// obs records what an apply read and wrote (see observing); nil
	// outside ApplyStaged.
	obs *observed
}

// ResourceManager is the underlying fluxcd/pkg/ssa manager, for the engines that
// need its options directly.
func (m *Manager) ResourceManager() *ssa.ResourceManager { return m.rm }

// Client is the controller-runtime client the manager writes with.
func (m *Manager) Client() client.Client { return m.client }

// ApplyOptions are the options of ApplyStaged.
type ApplyOptions struct {
	// Force recreates objects whose immutable fields changed.
	Force bool
	// ExclusionSelector skips in-cluster objects that carry any of these labels
	// or annotations.
	ExclusionSelector map[string]string
	// WaitTimeout bounds the wait for CRDs and Namespaces to be established
	// before the objects that depend on them are applied.
	WaitTimeout time.Duration
	// Claims are how the objects new to the applier are taken (see Claim).
	Claims Claims
	// Since are the fingerprints of the last drift check or apply, and Owner
	// the labels every object of the applier carries: an object whose
	// fingerprint still matches (read with one metadata LIST per kind and
	// namespace) was not written since it was found in sync, so it is not
	// applied, and the change set lists it as unchanged, as ssa would after
	// its dry-run.
	Since Fingerprints
	Owner map[string]string
}

// ApplyResult is what ApplyStaged did.
type ApplyResult struct {
	// ChangeSet lists what was applied, also when an error stopped it part
	// way.
	*ssa.ChangeSet
	// InSync is the fingerprint of every object the apply left in sync (see
	// observed), for the next drift check's DriftOptions.Since: objects
	// whose fingerprint in ApplyOptions.Since matched keep it.
	InSync Fingerprints
}

// applyWorkers is how many chunks of one kind are applied at once.
const applyWorkers = 4

// ApplyStaged applies objects in Flux's stages: CRDs, Namespaces and
// ClusterRoles first (waiting until they are established), then class
// definitions (waiting too), then the rest. The change set lists what was
// applied even when an error stops it part way.
//
// It is fluxcd/pkg/ssa's ApplyAllStaged with these differences: ssa applies
// the objects of a stage one after the other, which makes creating hundreds
// of objects slower than kubectl. Here the last stage is applied kind by
// kind, in ssa's kind order, and the objects of one kind in parallel chunks,
// each through ssa's ApplyAll (dry-run, drift check, apply). Objects whose
// fingerprint in opts.Since still matches are not applied. And the result
// says which objects the apply left in sync, from what its own requests
// returned.
func (m *Manager) ApplyStaged(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) (*ApplyResult, error) {
	res := &ApplyResult{ChangeSet: ssa.NewChangeSet(), InSync: Fingerprints{}}
	digests := make([]string, len(objs))
	for i, obj := range objs {
		var err error
		if digests[i], err = desiredDigest(obj, nil, opts.ExclusionSelector, m.fieldManager); err != nil {
			return res, fmt.Errorf("%s: %w", Describe(obj), err)
		}
	}
	desired := make(map[string]string, len(objs))
	var apply []*unstructured.Unstructured
	unchanged := m.unchangedSince(ctx, objs, digests, DriftOptions{Since: opts.Since, Owner: opts.Owner, ExclusionSelector: opts.ExclusionSelector})
	for i, obj := range objs {
		id := ID(obj)
		if unchanged[i] {
			res.Append([]ssa.ChangeSetEntry{changeSetEntry(obj, ssa.UnchangedAction)})
			res.InSync[id] = opts.Since[id]
			continue
		}
		desired[id] = digests[i]
		apply = append(apply, obj)
	}
	obs := newObserved()
	err := m.observing(obs).applyStaged(ctx, apply, opts, res.ChangeSet)
	for _, e := range res.Entries {
		id := e.ObjMetadata.String()
		if digest, ok := desired[id]; ok && e.Action != ssa.SkippedAction {
			if live := obs.inSync(id); live != nil {
				res.InSync[id] = fingerprintOf(live, digest)
			}
		}
	}
	return res, err
}

// changeSetEntry is ssa's change set entry of obj.
func changeSetEntry(obj *unstructured.Unstructured, action ssa.Action) ssa.ChangeSetEntry {
	return ssa.ChangeSetEntry{ObjMetadata: object.UnstructuredToObjMetadata(obj), GroupVersion: obj.GroupVersionKind().Version,
		Subject: Describe(obj), Action: action}
}

func (m *Manager) applyStaged(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions, cs *ssa.ChangeSet) error {
	o := ssa.DefaultApplyOptions()
	o.Force = opts.Force
	o.ExclusionSelector = opts.ExclusionSelector
	// An object created by a claim whose apply was killed before its fields
	// moved to our Apply entry (see Manager.create) still has them under our
	// Update entry, where no apply of ours could remove them: every apply
	// moves them, as the create would have.
	o.Cleanup.FieldManagers = []ssa.FieldManager{{Name: m.fieldManager, ExactMatch: true, OperationType: metav1.ManagedFieldsOperationUpdate}}
	if opts.WaitTimeout > 0 {
		o.WaitTimeout = opts.WaitTimeout
	}
	var defs, classes, rest []*unstructured.Unstructured
	for _, obj := range objs {
		switch {
		case ssautils.IsClusterDefinition(obj):
			defs = append(defs, obj)
		case ssautils.IsClassDefinition(obj):
			classes = append(classes, obj)
		default:
			rest = append(rest, obj)
		}
	}
	for _, stage := range [][]*unstructured.Unstructured{defs, classes} {
		if len(stage) == 0 {
			continue
		}
		applied, err := m.applyClaimed(ctx, stage, o, opts.Claims)
		cs.Append(applied.Entries)
		if err != nil {
			return err
		}
		if err := m.rm.WaitForSetWithContext(ctx, applied.ToObjMetadataSet(), ssa.WaitOptions{Interval: o.WaitInterval, Timeout: o.WaitTimeout}); err != nil {
			return err
		}
		if err := WaitForKinds(ctx, m.mapper, stage, o.WaitTimeout); err != nil {
			return err
		}
	}

	sort.Sort(ssa.SortableUnstructureds(rest))
	for start := 0; start < len(rest); {
		end := start + 1
		gk := rest[start].GroupVersionKind().GroupKind()
		for end < len(rest) && rest[end].GroupVersionKind().GroupKind() == gk {
			end++
		}
		if err := m.applyParallel(ctx, rest[start:end], o, opts.Claims, cs); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// WaitForKinds waits until mapper maps the served versions of the kinds that
// the CRDs among objs define. The API server reports a CRD Established before
// the discovery document of its group lists the new resource, and a kind
// added to a group the mapper knows already is only found once it does:
// without this wait, the custom resources applied next can fail with "no
// matches for kind". Objects other than CRDs are skipped.
func WaitForKinds(ctx context.Context, mapper meta.RESTMapper, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var kinds []schema.GroupVersionKind
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != crdKind {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			v, _ := v.(map[string]any)
			name, _ := v["name"].(string)
			if served, _ := v["served"].(bool); served && name != "" {
				kinds = append(kinds, schema.GroupVersionKind{Group: group, Version: name, Kind: kind})
			}
		}
	}
	for _, gvk := range kinds {
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("%s: the API server does not serve it %v after its CRD was established: %w", gvk, timeout, err)
		}
	}
	return nil
}

var crdKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// applyParallel applies objects of one kind in chunks, concurrently, adding
// the entries of the chunks that succeeded to cs in order.
func (m *Manager) applyParallel(ctx context.Context, objs []*unstructured.Unstructured, o ssa.ApplyOptions, claims Claims, cs *ssa.ChangeSet) error {
	size := (len(objs) + applyWorkers - 1) / applyWorkers
	if size < 16 {
		size = 16 // below this, a chunk's round trips cost more than they save
	}
	var chunks [][]*unstructured.Unstructured
	for i := 0; i < len(objs); i += size {
		chunks = append(chunks, objs[i:min(i+size, len(objs))])
	}
	results := make([]*ssa.ChangeSet, len(chunks))
	errs := make([]error, len(chunks))
	var wg sync.WaitGroup
	for i, chunk := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = m.applyClaimed(ctx, chunk, o, claims)
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r != nil {
			cs.Append(r.Entries)
		}
	}
	return errors.Join(errs...)
}

// WaitOptions are the options of Wait.
type WaitOptions struct {
	Interval time.Duration
	Timeout  time.Duration
	// FailFast returns as soon as one object is Failed, instead of waiting for
	// the timeout.
	FailFast bool
}

// Wait blocks until every object in entries is Current by kstatus, or returns an
// error naming the objects that are not.
func (m *Manager) Wait(ctx context.Context, entries []Entry, opts WaitOptions) error {
	set := make(object.ObjMetadataSet, 0, len(entries))
	for _, e := range entries {
		id, err := object.ParseObjMetadata(e.ID)
		if err != nil {
			return fmt.Errorf("inventory entry %q: %w", e.ID, err)
		}
		set = append(set, id)
	}
	o := ssa.DefaultWaitOptions()
	if opts.Interval > 0 {
		o.Interval = opts.Interval
	}
	if opts.Timeout > 0 {
		o.Timeout = opts.Timeout
	}
	o.FailFast = opts.FailFast
	return m.rm.WaitForSetWithContext(ctx, set, o)
}

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

// IgnoredPaths are drift ignore rules (jsondiff's: JSON pointers of the
// objects a selector matches, "" for the whole object) with their selectors
// compiled once, for detection and correction alike.
type IgnoredPaths struct {
	rules []compiledIgnoreRule
}

type compiledIgnoreRule struct {
	sel   *jsondiff.SelectorRegex
	paths []string
}

// CompileIgnoreRules compiles the selectors of rules.
func CompileIgnoreRules(rules []jsondiff.IgnoreRule) (*IgnoredPaths, error) {
	out := &IgnoredPaths{rules: make([]compiledIgnoreRule, 0, len(rules))}
	for _, r := range rules {
		sel, err := jsondiff.NewSelectorRegex(r.Selector)
		if err != nil {
			return nil, fmt.Errorf("ignore rule selector: %w", err)
		}
		out.rules = append(out.rules, compiledIgnoreRule{sel: sel, paths: r.Paths})
	}
	return out, nil
}

// For is the paths that the rules whose selector matches obj ignore.
func (p *IgnoredPaths) For(obj *unstructured.Unstructured) jsondiff.IgnorePaths {
	var paths jsondiff.IgnorePaths
	for _, r := range p.rules {
		if r.sel.MatchUnstructured(obj) {
			paths = append(paths, r.paths...)
		}
	}
	return paths
}

// DriftOptions are the options of Drift.
type DriftOptions struct {
	IgnoreRules []jsondiff.IgnoreRule
	// ExclusionSelector skips objects carrying any of these labels or
	// annotations, in the desired manifest or in the cluster.
	ExclusionSelector map[string]string
	// Since are the fingerprints of the objects the last check found in
	// sync: CheckDrift does not dry-run those that still match.
	Since Fingerprints
	// Owner, when set, are labels that every object with a fingerprint
	// carries: their metadata is read with one LIST per kind and namespace
	// with this selector, instead of one GET per object.
	Owner map[string]string
	// SharedLabel, when set (and Owner is not), is a label key that the
	// objects carry: their metadata is read from the LISTs, one per kind,
	// namespace and key, that the factory's checks share for SharedListTTL,
	// and with a GET when the LIST does not have them. For refreshes only: a
	// LIST taken before a write of this process would hide that write.
	SharedLabel string
	// OnError, when set, decides about an object whose dry run failed: a
	// nil error goes on with the diff it returns (nil leaves the object
	// out); an error stops Drift with it.
	OnError func(obj *unstructured.Unstructured, err error) (*jsondiff.Diff, error)
}

// Drift is how one object in the cluster differs from what we would apply.
type Drift struct {
	// ID is the object's inventory ID.
	ID string
	// Type is "create" when the object is missing and "update" when it changed.
	Type string
	// Changes lists the changed JSON pointers; empty for a missing object.
	Changes []Change
}

// Change is one JSON patch operation from the cluster object to the desired one,
// with Secret data masked.
type Change struct {
	Op   string
	Path string
	// From is the value in the cluster, To the value we would apply, both as
	// JSON; empty when there is none (an added or removed field).
	From string
	To   string
}

// consistentDiff is jsondiff.Unstructured, which reads the object and then
// dry-runs the apply, done again while the object changed between the two:
// a controller writing it in between (the deployment controller bumping its
// revision annotation after an image change, say) would otherwise show up as
// drift in fields nobody of ours touched. The object is read once more only
// when it drifted; an unchanged resourceVersion means no write came between
// the first read and that one, so none between the read and the dry-run.
func (m *Manager) consistentDiff(ctx context.Context, obj *unstructured.Unstructured, opts ...jsondiff.ResourceOption) (*jsondiff.Diff, error) {
	const attempts = 3
	for i := 1; ; i++ {
		d, err := jsondiff.Unstructured(ctx, m.client, obj, opts...)
		if err != nil || d.Type != jsondiff.DiffTypeUpdate || d.ClusterObject == nil || i == attempts {
			return d, err
		}
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(obj.GroupVersionKind())
		if err := m.client.Get(ctx, client.ObjectKeyFromObject(obj), now); err != nil {
			// Gone or unreadable now: the diff stands, and the next
			// refresh sees what happened.
			return d, nil
		}
		if now.GetResourceVersion() == d.ClusterObject.GetResourceVersion() {
			return d, nil
		}
	}
}

// Drift dry-runs a server-side apply of every desired object with our field
// manager and reports the objects whose live state differs. Fields set by other
// managers (an HPA's replicas, a webhook's defaults) are not drift, because the
// dry-run merges them in on both sides.
func (m *Manager) Drift(ctx context.Context, desired []*unstructured.Unstructured, opts DriftOptions) ([]Drift, error) {
	r, err := m.CheckDrift(ctx, desired, opts)
	if err != nil {
		return nil, err
	}
	return r.Drift, nil
}

// DriftReport is what CheckDrift found.
type DriftReport struct {
	// Drift is the objects that differ, sorted by ID.
	Drift []Drift
	// InSync is the fingerprint of every object found in sync, for the next
	// check's DriftOptions.Since.
	InSync Fingerprints
	// DryRun is the IDs of the objects that were dry-run, sorted: those
	// without a fingerprint in DriftOptions.Since, or whose fingerprint no
	// longer matched.
	DryRun []string
}

// CheckDrift is Drift, and skips the dry-run of each object whose fingerprint
// in opts.Since still matches: it reads the metadata of those objects (one GET
// each, no dry-run) and dry-runs only those that were written, deleted or
// recreated since, or whose desired state changed.
func (m *Manager) CheckDrift(ctx context.Context, desired []*unstructured.Unstructured, opts DriftOptions) (*DriftReport, error) {
	ignored, err := CompileIgnoreRules(opts.IgnoreRules)
	if err != nil {
		return nil, fmt.Errorf("drift detection: %w", err)
	}
	base := []jsondiff.ResourceOption{
		jsondiff.FieldOwner(m.fieldManager),
		jsondiff.ExclusionSelector(opts.ExclusionSelector),
		jsondiff.MaskSecrets(true),
		jsondiff.Rationalize(true),
	}
	digests := make([]string, len(desired))
	for i, obj := range desired {
		if digests[i], err = desiredDigest(obj, ignored.For(obj), opts.ExclusionSelector, m.fieldManager); err != nil {
			return nil, fmt.Errorf("drift detection: %s: %w", Describe(obj), err)
		}
	}
	report := &DriftReport{InSync: Fingerprints{}}
	unchanged := m.unchangedSince(ctx, desired, digests, opts)
	// One dry-run per object, as jsondiff.UnstructuredList does, but
	// concurrently: a plan of hundreds of objects is bound by round trips.
	set := make(jsondiff.DiffSet, len(desired))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(managerConcurrency)
	for i, obj := range desired {
		if unchanged[i] {
			report.InSync[idOf(obj)] = opts.Since[idOf(obj)]
			continue
		}
		report.DryRun = append(report.DryRun, idOf(obj))
		ignore := ignored.For(obj)
		g.Go(func() error {
			d, err := m.consistentDiff(gctx, obj, append(base[:len(base):len(base)], ignore)...)
			if err != nil && opts.OnError != nil {
				// The caller's error says what it is about, and is
				// returned as it is.
				if d, err = opts.OnError(obj, err); err != nil {
					return err
				}
				set[i] = d
				return nil
			}
			if err != nil {
				return fmt.Errorf("drift detection: %s: %w", Describe(obj), err)
			}
			set[i] = d
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, d := range set {
		if d == nil {
			continue
		}
		switch d.Type {
		case jsondiff.DiffTypeNone:
			if live := d.ClusterObject; live != nil && live.GetUID() != "" {
				report.InSync[idOf(d.DesiredObject)] = fingerprintOf(live, digests[i])
			}
		case jsondiff.DiffTypeCreate:
			report.Drift = append(report.Drift, Drift{ID: idOf(d.DesiredObject), Type: string(d.Type)})
		case jsondiff.DiffTypeUpdate:
			live, _ := d.ClusterObject.(*unstructured.Unstructured)
			report.Drift = append(report.Drift, Drift{ID: idOf(d.DesiredObject), Type: string(d.Type), Changes: ChangesOf(live, d.Patch)})
		}
	}
	// Sorted like inventories, so that state does not depend on apply order.
	slices.SortFunc(report.Drift, func(a, b Drift) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(report.DryRun)
	return report, nil
}

// unchangedSince says, for each desired object, whether its fingerprint in
// since still matches: the live object's metadata is read only for the
// objects that have one.
func (m *Manager) unchangedSince(ctx context.Context, desired []*unstructured.Unstructured, digests []string, opts DriftOptions) []bool {
	since := opts.Since
	out := make([]bool, len(desired))
	if len(since) == 0 {
		return out
	}
	var idx []int
	var objs []*unstructured.Unstructured
	for i, obj := range desired {
		if fp, ok := since[idOf(obj)]; ok && fp.Desired == digests[i] {
			idx, objs = append(idx, i), append(objs, obj)
		}
	}
	if len(objs) == 0 {
		return out
	}
	var live []*metav1.PartialObjectMetadata
	var errs []error
	switch {
	case len(opts.Owner) > 0:
		live, errs = m.lookupOwned(ctx, objs, opts.Owner)
	case opts.SharedLabel != "" && m.shared != nil:
		live, errs = m.lookupShared(ctx, objs, opts.SharedLabel)
	default:
		live, errs = m.Lookup(ctx, objs)
	}
	for j, i := range idx {
		// An object that cannot be read now is dry-run, which reports why.
		out[i] = errs[j] == nil && since[idOf(desired[i])].matches(live[j], digests[i])
	}
	return out
}

func idOf(o client.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return ID(u)
	}
	gvk := o.GetObjectKind().GroupVersionKind()
	return object.ObjMetadata{Namespace: o.GetNamespace(), Name: o.GetName(), GroupKind: gvk.GroupKind()}.String()
}

// ChangesOf lists the operations of patch, a JSON patch from the live object
// to another state of it, with the live value at each pointer. Secret data
// in the patch must be masked already; the live side is masked here.
func ChangesOf(live *unstructured.Unstructured, patch wjsondiff.Patch) []Change {
	var out []Change
	for _, op := range patch {
		out = append(out, Change{Op: op.Type, Path: op.Path, From: liveValue(live, op.Path, op.Type), To: jsonOrEmpty(op.Value)})
	}
	return out
}

// liveValue is the JSON of the cluster object's value at a changed pointer. The
// patch only carries the new value, and Secret data in it is already masked; the
// live side of a Secret is masked here the same way.
func liveValue(live *unstructured.Unstructured, path, op string) string {
	if live == nil || op == "add" {
		return ""
	}
	if live.GetKind() == "Secret" && live.GroupVersionKind().Group == "" {
		return `"***"`
	}
	p, err := jsonpointer.New(path)
	if err != nil {
		return ""
	}
	v, _, err := p.Get(live.Object)
	if err != nil {
		return ""
	}
	return jsonOrEmpty(v)
}

func jsonOrEmpty(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
