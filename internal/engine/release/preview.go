package release

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/fluxcd/pkg/ssa/jsondiff"
	wjsondiff "github.com/wI2L/jsondiff"
	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v4/pkg/action"
	helmchart "helm.sh/helm/v4/pkg/chart/v2"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Preview is what an install or upgrade would do to the cluster, found at
// plan without changing anything.
type Preview struct {
	// Changes lists, per object of the release, what the action would do:
	// "create", "update" (with the changed JSON pointers, Secret data
	// masked) or "delete". Objects the action leaves as they are are not
	// listed. Sorted by object ID.
	Changes []kube.Drift
	// Unknown says why the changes could not be worked out (the kinds of
	// the chart are not served yet, its namespace does not exist yet), in a
	// sentence; Changes is then empty and the plan shows them unknown.
	Unknown string
	// Warnings are things apply may trip on that the cluster cannot decide
	// at plan: a namespace or a kind that another resource may create first.
	Warnings []string
	// Conflicts are the fields of objects the action updates that another
	// field manager owns, which its server-side apply takes (it always
	// forces conflicts, as helm-controller's): the objects' changes list
	// them too. None under client-side apply, which takes fields silently.
	Conflicts []kube.FieldConflict
	// Migrated are the objects whose client-side managed fields Helm turns
	// into the field manager's server-side apply entry, when an upgrade
	// moves a release from client-side to server-side apply.
	Migrated []string

	// Taken are the objects the action takes with take_ownership
	// (takeownership.go), with their field managers now.
	Taken []Takeover
}

// PreviewError is a rejection that apply would meet for sure: the chart does
// not render (a `fail`, a values schema violation, a post-renderer patch that
// does not apply), or the API server refuses an object in a dry run.
type PreviewError struct{ Err error }

func (e *PreviewError) Error() string { return e.Err.Error() }
func (e *PreviewError) Unwrap() error { return e.Err }

// preview does, for the action act decided on state s, what the action would
// do, with every write a server-side dry run: Helm renders the release as
// the action would (values schema, templates, post-renderers, the cluster's
// capabilities and lookups), and Helm's own kube client then creates, patches
// (its three-way merge) and deletes the objects through a client whose
// requests are all dry runs. What the API server answers is diffed against
// the live objects read just before.
func (r *request) preview(ctx context.Context, act Action, s releaseState) (*Preview, error) {
	dry, err := r.sess.dryRun()
	if err != nil {
		return nil, err
	}
	cfg := dry.config(nil)
	// Helm's action builds the objects it applies and prepares them (its
	// ownership label and annotations, setMetadataVisitor) before the point
	// where a dry run stops: the preview applies those very objects.
	built := &buildRecorder{Interface: cfg.KubeClient}
	cfg.KubeClient = built
	var (
		next    *helmrelease.Release
		current *helmrelease.Release
		mode    writeMode
	)
	switch act {
	case ActionInstall:
		mode = installMode(r.spec)
		in := newInstall(cfg, r.spec, r.name, r.sess.releaseNS, s)
		in.DryRunStrategy = action.DryRunServer
		next, err = runRelease(in.RunWithContext(ctx, r.chart, r.values))
	case ActionUpgrade, ActionUpgradeFailed:
		current, err = releaseToPatch(cfg, r.name, s.rls)
		if err != nil {
			return nil, err
		}
		mode = upgradeMode(r.spec, s.rls)
		up := newUpgrade(cfg, r.spec, r.sess.releaseNS, mode)
		up.DryRunStrategy = action.DryRunServer
		next, err = runRelease(up.RunWithContext(ctx, r.name, r.chart, r.values))
	default:
		return nil, nil
	}
	if err != nil {
		if kube.IsNoKindMatch(err) {
			// The objects of the kinds the cluster serves can still be
			// taken (take_ownership): the plan lists them, or fails on one
			// another owner holds, as it does without custom kinds.
			taken, terr := r.takeovers(ctx, act, s)
			if terr != nil {
				return nil, terr
			}
			p := unknownKinds(r.chart.CRDObjects(), err)
			p.Taken = taken
			return p, nil
		}
		if act == ActionInstall && strings.Contains(err.Error(), "invalid ownership metadata") && r.ownObjectsOfAnotherRelease(ctx, cfg, s) {
			// The objects belong to a release of this same resource under
			// another name (a new release_name replaces the resource: the
			// old release is uninstalled first, in the same apply).
			return &Preview{Unknown: "objects of the chart belong to another release of this resource, which a replacement uninstalls first"}, nil
		}
		pe := &PreviewError{Err: fmt.Errorf("%s would fail: %w", act, postRenderClash(r.spec, err))}
		if p := fielderr.PathOf(pe.Err); p != "" {
			return nil, &fielderr.Error{Path: p, Err: pe}
		}
		if p := renderErrorPath(err.Error()); p != "" {
			// The values or the chart: the attribute that is wrong.
			return nil, &fielderr.Error{Path: p, Err: pe}
		}
		return nil, pe
	}

	ns, err := namespaceExists(ctx, dry.f, r.sess.releaseNS)
	if err != nil {
		return nil, err
	}
	if !ns {
		p := &Preview{Unknown: fmt.Sprintf("namespace %s does not exist yet", r.sess.releaseNS)}
		if act == ActionInstall && !r.spec.Install.CreateNamespace {
			p.Warnings = append(p.Warnings, fmt.Sprintf("namespace %s does not exist: the install fails unless it is created first "+
				"(install.create_namespace, or another resource applied before this one)", r.sess.releaseNS))
		}
		return p, nil
	}

	kc := built.Interface
	target := built.last(next.Manifest)
	if target == nil {
		return nil, fmt.Errorf("%s: Helm's dry run built no objects from the new manifest", act)
	}
	var original helmkube.ResourceList
	if current != nil {
		if original, err = kc.Build(bytes.NewBufferString(current.Manifest), false); err != nil {
			return nil, fmt.Errorf("build the objects of %s.v%d: %w", current.Name, current.Version, err)
		}
	}
	before, err := liveObjects(target)
	if err != nil {
		return nil, err
	}
	taken, err := r.takeovers(ctx, act, s)
	if err != nil {
		return nil, err
	}
	if act == ActionInstall && s.kind == stateAbsent && len(before) > len(taken) {
		// Objects that Helm would adopt (they carry this release's name and
		// namespace, else the dry run failed above) with no release in this
		// storage namespace: a release of the same name stored elsewhere,
		// which a replacement of this resource (a new storage namespace)
		// uninstalls before it installs. Whether apply creates or adopts
		// them is not known here.
		return &Preview{Unknown: fmt.Sprintf("%d object(s) of release %s exist with no release in storage namespace %s "+
			"(a release of the same name stored elsewhere, which a replacement uninstalls first)", len(before), r.name, r.sess.storageNS)}, nil
	}
	// Objects of the new manifest that exist but are not in the release
	// patched from (an install over a pending or failed install of ours, an
	// upgrade that adopts): Helm patches them from their target, as its
	// install (toBeAdopted) and upgrade (toBeUpdated) pass them to Update.
	for _, info := range target {
		if _, ok := before[infoKey(info)]; ok && original.Get(info) == nil {
			original.Append(info)
		}
	}
	// What Helm's action passes to Update (install.go, upgrade.go): an
	// install forces nothing; an upgrade from a client-side release to
	// server-side apply first turns our client-side managed fields into
	// our server-side apply entry.
	migrate := act != ActionInstall && mode.ServerSide && recordApplyMethod(current) == ApplyMethodCSA
	// Only a server-side upgrade asks for its conflicts, with the objects
	// as sent: copy them then only.
	force := mode.ForceConflicts && act != ActionInstall
	if act == ActionInstall && mode.ServerSide && r.spec.Install.TakeOwnership {
		force = true // as newInstall: take_ownership takes the fields too
	}
	var applied map[string]runtime.Object
	if force {
		applied = appliedObjects(target)
	}
	res, err := kc.Update(original, target,
		helmkube.ClientUpdateOptionServerSideApply(mode.ServerSide, force),
		helmkube.ClientUpdateOptionForceReplace(mode.ForceReplace && act != ActionInstall),
		helmkube.ClientUpdateOptionUpgradeClientSideFieldManager(migrate))
	if err != nil {
		pe := &PreviewError{Err: fmt.Errorf("%s would fail: %w", act, err)}
		if p := renderErrorPath(err.Error()); p != "" {
			// The values or the chart: the attribute that is wrong.
			return nil, &fielderr.Error{Path: p, Err: pe}
		}
		return nil, pe
	}
	if act == ActionInstall && s.kind == stateAbsent && len(res.Updated) > len(taken) {
		// Objects that did not exist when read above exist now: another
		// apply is installing a release of this name (Plan looks again).
		return &Preview{Unknown: fmt.Sprintf("%d object(s) of release %s appeared while the plan ran", len(res.Updated), r.name)}, nil
	}
	p := &Preview{Taken: taken}
	for _, info := range res.Created {
		p.Changes = append(p.Changes, kube.Drift{ID: infoID(info), Type: "create"})
	}
	for _, info := range res.Updated {
		changes, err := objectChanges(before[infoKey(info)], info.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", infoID(info), err)
		}
		if len(changes) > 0 {
			p.Changes = append(p.Changes, kube.Drift{ID: infoID(info), Type: "update", Changes: changes})
		}
	}
	for _, info := range res.Deleted {
		p.Changes = append(p.Changes, kube.Drift{ID: infoID(info), Type: "delete"})
	}
	slices.SortFunc(p.Changes, func(a, b kube.Drift) int { return strings.Compare(a.ID, b.ID) })
	if force {
		if p.Conflicts, err = r.conflicts(res.Updated, applied, before); err != nil {
			return nil, err
		}
	}
	if migrate {
		p.Migrated = withManagerEntry(res.Updated, before, r.sess.f.FieldManager())
	}
	return p, nil
}

// appliedObjects are copies of the objects of list as Helm will send them,
// by infoKey: Helm's Update leaves the API server's answer in the infos.
func appliedObjects(list helmkube.ResourceList) map[string]runtime.Object {
	out := make(map[string]runtime.Object, len(list))
	for _, info := range list {
		out[infoKey(info)] = info.Object.DeepCopyObject()
	}
	return out
}

// conflicts are the fields that a server-side apply of the updated objects
// would take from other field managers: each object is applied once more,
// a dry run without force, and the API server names what it refuses. Our
// own manager's client-side entries are not conflicts: Helm migrates them
// first.
func (r *request) conflicts(updated helmkube.ResourceList, applied map[string]runtime.Object, live map[string]*unstructured.Unstructured) ([]kube.FieldConflict, error) {
	fm := r.sess.f.FieldManager()
	// One dry run per object, at most conflictReads at once: each is a round
	// trip, and a plan of many objects would wait for them one by one.
	found := make([][]kube.FieldConflict, len(updated))
	var g errgroup.Group
	g.SetLimit(conflictReads)
	for i, info := range updated {
		obj := applied[infoKey(info)]
		if obj == nil || othersKept(live[infoKey(info)], info.Object, fm) {
			continue
		}
		g.Go(func() error {
			data, err := runtime.Encode(unstructured.UnstructuredJSONScheme, obj)
			if err != nil {
				return fmt.Errorf("encode %s: %w", infoID(info), err)
			}
			force := false
			_, err = resource.NewHelper(info.Client, info.Mapping).DryRun(true).WithFieldManager(fm).
				Patch(info.Namespace, info.Name, types.ApplyPatchType, data, &metav1.PatchOptions{Force: &force})
			if err == nil {
				return nil
			}
			c := kube.ApplyConflicts(infoID(info), err, fm)
			if c == nil && !apierrors.IsConflict(err) {
				return fmt.Errorf("dry-run %s without forcing conflicts: %w", infoID(info), err)
			}
			found[i] = c
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []kube.FieldConflict
	for _, c := range found {
		out = append(out, c...)
	}
	return out, nil
}

// othersKept says whether the forced dry run's result after leaves every
// managedFields entry of a manager other than fm as it is in before: a
// forced apply takes a field that conflicts from its owner's entry, so then
// nothing conflicts, and the dry run without forcing, which would list what
// conflicts, is not needed.
func othersKept(before *unstructured.Unstructured, after runtime.Object, fm string) bool {
	if before == nil {
		return false
	}
	a, err := meta.Accessor(after)
	if err != nil {
		return false
	}
	others := func(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
		var out []metav1.ManagedFieldsEntry
		for _, e := range entries {
			if e.Manager != fm {
				out = append(out, e)
			}
		}
		return out
	}
	b, c := others(before.GetManagedFields()), others(a.GetManagedFields())
	return len(b) == len(c) && equality.Semantic.DeepEqual(b, c)
}

// conflictReads bounds the dry runs of conflicts that run at once.
const conflictReads = 8

// withManagerEntry are the IDs of the updated objects whose live managed
// fields have a client-side (Update) entry of manager fm: those whose
// entries Helm migrates to server-side apply.
func withManagerEntry(updated helmkube.ResourceList, live map[string]*unstructured.Unstructured, fm string) []string {
	var out []string
	for _, info := range updated {
		u := live[infoKey(info)]
		if u == nil {
			continue
		}
		for _, e := range u.GetManagedFields() {
			if e.Manager == fm && e.Operation == metav1.ManagedFieldsOperationUpdate {
				out = append(out, infoID(info))
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// previewAsNew is the preview of an install of a release whose name is free
// and whose objects do not exist: every object of the chart, created. It is
// what a create plans when another release holds its name (apply refuses
// it), so that the plan agrees with one made before that release appeared.
// Helm's dry run runs on empty release storage and only builds the objects.
func (r *request) previewAsNew(ctx context.Context) (*Preview, error) {
	dry, err := r.sess.dryRun()
	if err != nil {
		return nil, err
	}
	cfg := dry.config(nil)
	cfg.Releases = storage.Init(driver.NewMemory())
	built := &buildRecorder{Interface: cfg.KubeClient}
	cfg.KubeClient = built
	in := newInstall(cfg, r.spec, r.name, r.sess.releaseNS, releaseState{kind: stateAbsent})
	in.DryRunStrategy = action.DryRunServer
	next, err := runRelease(in.RunWithContext(ctx, r.chart, r.values))
	if err != nil {
		return nil, fmt.Errorf("install would fail: %w", err)
	}
	target := built.last(next.Manifest)
	if target == nil {
		return nil, errors.New("install: Helm's dry run built no objects from the manifest")
	}
	p := &Preview{}
	for _, info := range target {
		p.Changes = append(p.Changes, kube.Drift{ID: infoID(info), Type: "create"})
	}
	slices.SortFunc(p.Changes, func(a, b kube.Drift) int { return strings.Compare(a.ID, b.ID) })
	return p, nil
}

// releaseToPatch is the release Helm's upgrade patches from: the latest when
// it is deployed, else the deployed one (as Helm's upgrade chooses).
func releaseToPatch(cfg *action.Configuration, name string, latest *helmrelease.Release) (*helmrelease.Release, error) {
	if latest != nil && latest.Info != nil && latest.Info.Status == helmcommon.StatusDeployed {
		return latest, nil
	}
	dep, err := releaseStore{cfg.Releases}.Deployed(name)
	if err == nil {
		return dep, nil
	}
	if latest != nil {
		return latest, nil
	}
	return nil, fmt.Errorf("read the deployed release %s: %w", name, err)
}

// namespaceExists says whether the release namespace is there.
func namespaceExists(ctx context.Context, f *kube.Factory, name string) (bool, error) {
	c, err := f.Client()
	if err != nil {
		return false, err
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	err = c.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("read namespace %s: %w", name, err)
}

// liveObjects reads the objects of list that exist, keyed by infoKey.
func liveObjects(list helmkube.ResourceList) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	for _, info := range list {
		obj, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read %s: %w", infoID(info), err)
		}
		u, err := toUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", infoID(info), err)
		}
		out[infoKey(info)] = u
	}
	return out, nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func infoKey(info *resource.Info) string {
	return info.Mapping.GroupVersionKind.GroupKind().String() + "/" + info.Namespace + "/" + info.Name
}

// infoID is the object's inventory ID, as drift names objects.
func infoID(info *resource.Info) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(info.Mapping.GroupVersionKind)
	u.SetNamespace(info.Namespace)
	u.SetName(info.Name)
	return kube.ID(u)
}

// objectChanges is how after differs from before, as drift reports it: the
// labels and annotations, and everything outside metadata and status, with
// Secret data masked.
func objectChanges(before *unstructured.Unstructured, afterObj runtime.Object) ([]kube.Change, error) {
	after, err := toUnstructured(afterObj)
	if err != nil {
		return nil, err
	}
	if before == nil {
		return nil, nil
	}
	var patch wjsondiff.Patch
	for _, part := range []func(*unstructured.Unstructured) map[string]any{labelsAndAnnotations, withoutMetadataAndStatus} {
		p, err := wjsondiff.Compare(part(before), part(after), wjsondiff.Rationalize())
		if err != nil {
			return nil, err
		}
		patch = append(patch, p...)
	}
	secret := after.GroupVersionKind().Group == "" && after.GetKind() == "Secret"
	if secret {
		patch = jsondiff.MaskSecretPatchData(patch)
	}
	return kube.ChangesOf(before, patch), nil
}

func labelsAndAnnotations(u *unstructured.Unstructured) map[string]any {
	m := map[string]any{}
	if l, ok, _ := unstructured.NestedFieldCopy(u.Object, "metadata", "labels"); ok {
		_ = unstructured.SetNestedField(m, l, "metadata", "labels")
	}
	if a, ok, _ := unstructured.NestedFieldCopy(u.Object, "metadata", "annotations"); ok {
		_ = unstructured.SetNestedField(m, a, "metadata", "annotations")
	}
	return m
}

func withoutMetadataAndStatus(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata")
	unstructured.RemoveNestedField(c.Object, "status")
	return c.Object
}

// unknownKinds is the preview of a release with kinds the cluster does not
// serve, and says why it cannot be previewed: they come with the chart's
// CRDs, or from elsewhere.
func unknownKinds(crds []helmchart.CRD, err error) *Preview {
	if len(crds) > 0 {
		return &Preview{Unknown: "the chart has kinds whose CustomResourceDefinitions it installs first"}
	}
	return &Preview{
		Unknown: "the cluster does not serve a kind of the chart",
		Warnings: []string{fmt.Sprintf("the cluster does not serve a kind of the chart (%v): apply fails unless another resource "+
			"installs its CustomResourceDefinition first", err)},
	}
}

// ownObjectsOfAnotherRelease says whether the objects of the chart that exist
// in the cluster all carry this resource's origin labels (and at least one
// does): Helm refuses to install over them only because another release of
// this resource owns them.
func (r *request) ownObjectsOfAnotherRelease(ctx context.Context, cfg *action.Configuration, s releaseState) bool {
	in := newInstall(cfg, r.spec, r.name, r.sess.releaseNS, s)
	in.DryRunStrategy = action.DryRunClient
	rel, err := runRelease(in.RunWithContext(ctx, r.chart, r.values))
	if err != nil {
		return false
	}
	mapper, err := r.sess.f.RESTMapper()
	if err != nil {
		return false
	}
	objs, err := driftObjects(rel, mapper)
	if err != nil {
		return false
	}
	c, err := r.sess.f.Client()
	if err != nil {
		return false
	}
	found := false
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return false
		}
		if l := live.GetLabels(); l[OriginNameLabel] != r.spec.Name || l[OriginNamespaceLabel] != r.spec.Namespace {
			return false
		}
		found = true
	}
	return found
}

// buildRecorder is Helm's kube client keeping every object list it built,
// with the manifest it built it from. Helm's install and upgrade prepare the
// list they apply in place (the ownership label and annotations) and a dry
// run stops just before applying it: what was built last from the new
// manifest is then exactly what the action would apply.
type buildRecorder struct {
	helmkube.Interface
	built []builtManifest
}

type builtManifest struct {
	manifest string
	list     helmkube.ResourceList
}

func (b *buildRecorder) Build(in io.Reader, validate bool) (helmkube.ResourceList, error) {
	data, err := io.ReadAll(in)
	if err != nil {
		return nil, err
	}
	list, err := b.Interface.Build(bytes.NewReader(data), validate)
	if err == nil {
		b.built = append(b.built, builtManifest{manifest: string(data), list: list})
	}
	return list, err
}

// last is the list built last from manifest, nil when none was.
func (b *buildRecorder) last(manifest string) helmkube.ResourceList {
	for i := len(b.built) - 1; i >= 0; i-- {
		if b.built[i].manifest == manifest {
			if b.built[i].list == nil {
				return helmkube.ResourceList{}
			}
			return b.built[i].list
		}
	}
	return nil
}
