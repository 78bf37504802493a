package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	"github.com/go-openapi/jsonpointer"
	wjsondiff "github.com/wI2L/jsondiff"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
