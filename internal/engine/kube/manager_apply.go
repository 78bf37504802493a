package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

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
