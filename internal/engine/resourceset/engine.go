package resourceset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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
}

func (e *Engine) factory(spec *Spec) (*kube.Factory, error) {
	if spec.ServiceAccountName == "" {
		return e.kube, nil
	}
	return e.kube.Impersonate(spec.Namespace, spec.ServiceAccountName)
}

// Desired renders the spec and defaults the namespaces of the rendered objects
// with the cluster's RESTMapper (a kind whose CRD is in the set needs no
// mapping). It reads discovery but writes nothing.
func (e *Engine) Desired(ctx context.Context, spec *Spec) ([]*unstructured.Unstructured, error) {
	objs, err := Render(spec)
	if err != nil {
		return nil, err
	}
	mapper, err := e.kube.RESTMapper()
	if err != nil {
		return nil, err
	}
	if err := defaultNamespaces(objs, newScopes(mapper, objs), spec.Namespace); err != nil {
		return nil, err
	}
	return dedupe(objs), nil
}

// Plan returns the inventory and manifests an apply of spec will leave.
func (e *Engine) Plan(ctx context.Context, spec *Spec) (*Result, error) {
	if err := ValidateDependencies(spec.Dependencies); err != nil {
		return nil, err
	}
	objs, err := e.Desired(ctx, spec)
	if err != nil {
		return nil, err
	}
	manifests, err := Manifests(objs)
	if err != nil {
		return nil, err
	}
	return &Result{Inventory: kube.Inventory(objs), Manifests: manifests}, nil
}

// Apply waits for the dependencies, applies the set in stages, prunes the
// objects of prev that left it, and with spec.Wait waits for the objects. The
// result is never nil: after a failure its inventory holds what the cluster
// really has (applied objects, and stale ones not yet pruned), so that state
// can be saved and a second apply converges.
func (e *Engine) Apply(ctx context.Context, spec *Spec, prev []kube.Entry) (*Result, error) {
	res := &Result{Inventory: slices.Clone(prev)}
	fail := func(reason string, err error) (*Result, error) {
		res.Conditions = []Condition{{Type: "Ready", Status: "False", Reason: reason, Message: err.Error()}}
		return res, err
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}

	deps, err := compileDependencies(spec.Dependencies)
	if err != nil {
		return fail("InvalidDependencies", err)
	}
	objs, err := e.Desired(ctx, spec)
	if err != nil {
		return fail("BuildFailed", err)
	}
	if res.Manifests, err = Manifests(objs); err != nil {
		return fail("BuildFailed", err)
	}
	f, err := e.factory(spec)
	if err != nil {
		return fail("ClientFailed", err)
	}
	m, err := f.Manager()
	if err != nil {
		return fail("ClientFailed", err)
	}

	depCtx, cancel := context.WithTimeout(ctx, timeout)
	err = waitForDependencies(depCtx, m.Client(), deps, dependencyPollInterval)
	cancel()
	if err != nil {
		return fail("DependencyNotReady", err)
	}

	cs, applyErr := m.ApplyStaged(ctx, objs, kube.ApplyOptions{Force: spec.Force, WaitTimeout: timeout})
	res.Inventory = union(res.Inventory, entriesIn(objs, cs, anyAction))
	if applyErr != nil {
		// A stage that fails part way loses its change set; what reached the
		// cluster is what exists with our owner labels.
		res.Inventory = union(res.Inventory, ownedExisting(ctx, m, spec, objs))
		return fail("ApplyFailed", fmt.Errorf("apply: %w", applyErr))
	}

	desired := kube.Inventory(objs)
	remaining, pruneErr := prune(ctx, m, spec, subtract(prev, desired), timeout)
	res.Inventory = union(desired, remaining)
	if pruneErr != nil {
		return fail("PruneFailed", fmt.Errorf("prune: %w", pruneErr))
	}

	if spec.Wait && len(desired) > 0 {
		if err := m.Wait(ctx, desired, kube.WaitOptions{Interval: 2 * time.Second, Timeout: timeout, FailFast: true}); err != nil {
			return fail("HealthCheckFailed", fmt.Errorf("wait: %w", err))
		}
	}
	res.Conditions = []Condition{{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded",
		Message: fmt.Sprintf("Applied %d objects", len(desired))}}
	return res, nil
}

// Drift reports, for the objects the set renders and owns, how the cluster
// differs from them: edited fields and deleted objects.
func (e *Engine) Drift(ctx context.Context, spec *Spec, inventory []kube.Entry) ([]kube.Drift, error) {
	objs, err := e.Desired(ctx, spec)
	if err != nil {
		return nil, err
	}
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
	f, err := e.factory(spec)
	if err != nil {
		return nil, err
	}
	m, err := f.Manager()
	if err != nil {
		return nil, err
	}
	return m.Drift(ctx, check, kube.DriftOptions{})
}

// Delete prunes the whole inventory, in the same stages as prune. It returns
// the entries whose objects still exist.
func (e *Engine) Delete(ctx context.Context, spec *Spec, inventory []kube.Entry) ([]kube.Entry, error) {
	f, err := e.factory(spec)
	if err != nil {
		return inventory, err
	}
	m, err := f.Manager()
	if err != nil {
		return inventory, err
	}
	timeout := spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return prune(ctx, m, spec, inventory, timeout)
}

// fluxWaitTimeout bounds the wait for Flux objects to be finalized before the
// rest is deleted: their controllers need the rest (namespaces, service
// accounts) to clean up after themselves.
const fluxWaitTimeout = time.Minute

// prune deletes the objects of stale that carry the set's owner labels and are
// not annotated prune: disabled: Flux objects first (waiting for them to go),
// then the other objects, then cluster definitions (CRDs, Namespaces,
// ClusterRoles). It returns the entries whose objects still exist.
func prune(ctx context.Context, m *kube.Manager, spec *Spec, stale []kube.Entry, timeout time.Duration) ([]kube.Entry, error) {
	if len(stale) == 0 {
		return nil, nil
	}
	var flux, rest, defs []*unstructured.Unstructured
	for _, en := range stale {
		o, err := kube.ObjectOf(en)
		if err != nil {
			return stale, err
		}
		switch {
		case isFluxKind(o):
			flux = append(flux, o)
		case ssautils.IsClusterDefinition(o):
			defs = append(defs, o)
		default:
			rest = append(rest, o)
		}
	}
	opts := kube.DeleteOptions{
		Inclusions: map[string]string{NameLabel: spec.Name, NamespaceLabel: spec.Namespace},
		Exclusions: map[string]string{PruneAnnotation: DisabledValue},
	}
	var remaining []kube.Entry
	var errs []error
	for i, stage := range [][]*unstructured.Unstructured{flux, rest, defs} {
		if len(stage) == 0 {
			continue
		}
		cs, err := m.Delete(ctx, stage, opts)
		if err != nil {
			errs = append(errs, err)
			remaining = append(remaining, entriesOf(stage)...)
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

func isFluxKind(o *unstructured.Unstructured) bool {
	g := o.GroupVersionKind().Group
	return strings.HasSuffix(g, ".toolkit.fluxcd.io") || g == "fluxcd.controlplane.io"
}

// entriesIn returns the entries of objs that the change set lists with an
// action keep accepts.
func entriesIn(objs []*unstructured.Unstructured, cs *ssa.ChangeSet, keep func(ssa.Action) bool) []kube.Entry {
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
	for _, o := range objs {
		if en := kube.EntryOf(o); listed[en.ID] {
			out = append(out, en)
		}
	}
	return out
}

func anyAction(ssa.Action) bool       { return true }
func deletedAction(a ssa.Action) bool { return a == ssa.DeletedAction }

// ownedExisting returns the entries of the objects that exist in the cluster
// with this set's owner labels.
func ownedExisting(ctx context.Context, m *kube.Manager, spec *Spec, objs []*unstructured.Unstructured) []kube.Entry {
	var out []kube.Entry
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := m.Client().Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			continue
		}
		if l := live.GetLabels(); l[NameLabel] == spec.Name && l[NamespaceLabel] == spec.Namespace {
			out = append(out, kube.EntryOf(o))
		}
	}
	return out
}

func entriesOf(objs []*unstructured.Unstructured) []kube.Entry {
	out := make([]kube.Entry, 0, len(objs))
	for _, o := range objs {
		out = append(out, kube.EntryOf(o))
	}
	return out
}

// union merges entry lists by ID, the first list's version winning, sorted.
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
		if o.GetKind() == "Secret" && o.GroupVersionKind().Group == "" {
			c = o.DeepCopy()
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
