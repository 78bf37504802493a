package kube

import (
	"context"
	"slices"
	"sync"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/jsondiff"
	ssanormalize "github.com/fluxcd/pkg/ssa/normalize"
	wjsondiff "github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// observed is what one apply read and wrote of each object, by inventory ID,
// so that the apply can say which objects it left in sync without a drift
// check of its own (a GET and a dry-run of every object again):
//
//   - the object a server-side apply of ours returns is the desired state
//     applied, so a dry-run of the same apply would find it in sync;
//   - so is the object a create of ours returns once its fields moved to our
//     Apply entry (Manager.create);
//   - an object ssa read and then dry-ran at the same resourceVersion, and
//     left as it was, is in sync when the dry-run and it do not differ as a
//     drift check compares them (jsondiff: labels and annotations, and
//     everything but metadata and status).
//
// Any other write (a cleanup of managed fields, a claim's annotations) or a
// failed request leaves the object without a verdict, and so without a
// fingerprint: the next refresh dry-runs it, as it would without this.
type observed struct {
	mu   sync.Mutex
	seen map[string]observation
}

type observation struct {
	// read is the object as a GET returned it, until a dry-run at its
	// resourceVersion tells whether it is in sync.
	read *unstructured.Unstructured
	// live is the object found in sync; nil without a verdict.
	live metav1.Object
}

func newObserved() *observed { return &observed{seen: map[string]observation{}} }

// inSync returns the object that id was found in sync as, or nil.
func (o *observed) inSync(id string) metav1.Object {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[id].live
}

func (o *observed) set(id string, ob observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[id] = ob
}

func (o *observed) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.seen, id)
}

// dryRun records the dry-run of an apply of id's desired object: the object
// read before it is in sync when the dry-run ran on the same
// resourceVersion and finds nothing to change.
func (o *observed) dryRun(id string, dry *unstructured.Unstructured) {
	o.mu.Lock()
	defer o.mu.Unlock()
	read := o.seen[id].read
	delete(o.seen, id)
	if read == nil || read.GetUID() == "" || read.GetUID() != dry.GetUID() || read.GetResourceVersion() != dry.GetResourceVersion() {
		return
	}
	if inSyncWith(read, dry) {
		o.seen[id] = observation{live: read}
	}
}

// inSyncWith says whether live and the dry-run of the desired object's apply
// on it do not differ, as jsondiff.Unstructured (the drift check) compares
// them: labels and annotations, then everything but metadata and status,
// with the dry-run normalized. It is stricter on labels and annotations (a
// label only live has is a difference here).
func inSyncWith(live, dry *unstructured.Unstructured) bool {
	if !equality.Semantic.DeepEqual(live.GetLabels(), dry.GetLabels()) ||
		!equality.Semantic.DeepEqual(live.GetAnnotations(), dry.GetAnnotations()) {
		return false
	}
	d := dry.DeepCopy()
	if err := ssanormalize.DryRunUnstructured(d); err != nil {
		return false
	}
	patch, err := jsondiff.DiffUnstructured(live, d, wjsondiff.Rationalize())
	return err == nil && len(patch) == 0
}

// observingClient is a client that records in obs what each request read
// or wrote, by inventory ID.
type observingClient struct {
	client.Client
	obs *observed
}

func idOfKey(obj client.Object, key client.ObjectKey) string {
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	return object.ObjMetadata{Namespace: key.Namespace, Name: key.Name, GroupKind: gk}.String()
}

func (c observingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	id := idOfKey(obj, key)
	err := c.Client.Get(ctx, key, obj, opts...)
	u, ok := obj.(*unstructured.Unstructured)
	if err != nil || !ok {
		c.obs.forget(id)
		return err
	}
	c.obs.set(id, observation{read: u.DeepCopy()})
	return nil
}

func (c observingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	id := idOfKey(obj, client.ObjectKeyFromObject(obj))
	po := (&client.PatchOptions{}).ApplyOptions(opts)
	err := c.Client.Patch(ctx, obj, patch, opts...)
	u, ok := obj.(*unstructured.Unstructured)
	switch {
	case err != nil || !ok:
		c.obs.forget(id)
	case slices.Contains(po.DryRun, metav1.DryRunAll):
		if patch.Type() == types.ApplyPatchType {
			c.obs.dryRun(id, u)
		}
	case patch.Type() == types.ApplyPatchType:
		c.obs.set(id, observation{live: u.DeepCopy()})
	default:
		c.obs.forget(id)
	}
	return err
}

func (c observingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.obs.forget(idOfKey(obj, client.ObjectKeyFromObject(obj)))
	return c.Client.Create(ctx, obj, opts...)
}

func (c observingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.obs.forget(idOfKey(obj, client.ObjectKeyFromObject(obj)))
	return c.Client.Update(ctx, obj, opts...)
}

func (c observingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.obs.forget(idOfKey(obj, client.ObjectKeyFromObject(obj)))
	return c.Client.Delete(ctx, obj, opts...)
}

// observing returns a copy of m whose requests, its ssa manager's included,
// are recorded in obs.
func (m *Manager) observing(obs *observed) *Manager {
	c := observingClient{Client: m.client, obs: obs}
	om := *m
	om.client = c
	om.rm = ssa.NewResourceManager(c, m.poller, ssa.Owner{Field: m.fieldManager, Group: OwnerGroup})
	om.rm.SetConcurrency(managerConcurrency)
	om.obs = obs
	return &om
}
