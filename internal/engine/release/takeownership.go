package release

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// take_ownership (install.take_ownership, upgrade.take_ownership) is Helm's
// --take-ownership, hashicorp/helm's take_ownership and the opposite of
// helm-controller's disableTakeOwnership: an install, or an upgrade for the
// objects new to the release, takes objects that exist in the cluster
// instead of failing on them (Helm's "invalid ownership metadata"). Helm's
// switch takes every object in its way; ours takes only those that belong
// to nobody (kube.OwnerOf: no Helm release, no stevedore resource, no Flux
// or flux-operator object): before Helm runs, the manifest is rendered and
// every object of it that exists is checked, at plan and again at apply,
// and one that another owner holds fails the action before anything is
// written. The default is false, as hashicorp/helm's (Flux's default is to
// take them).

// Takeover is an object that an install or upgrade with take_ownership
// takes: it exists, and belongs to no release and no other tool.
type Takeover struct {
	// Object is the object, as `Kind/namespace/name`.
	Object string
	// Managers are its field managers now, each as `manager (operation)`.
	Managers []string
}

func (t Takeover) String() string {
	if len(t.Managers) == 0 {
		return t.Object + " (no field managers)"
	}
	return t.Object + " (field managers: " + strings.Join(t.Managers, ", ") + ")"
}

// TakeOwnershipError is an object in the way of an install or upgrade with
// take_ownership that another owner holds: take_ownership never takes it.
type TakeOwnershipError struct {
	Action string // install or upgrade
	// Owned are the objects, each with its owner.
	Owned []string
}

func (e *TakeOwnershipError) Error() string {
	return fmt.Sprintf("%s.take_ownership takes only objects that belong to no release or other tool, and these belong to another: %s",
		e.Action, strings.Join(e.Owned, "; "))
}

// AttributePath is the switch that cannot take them.
func (e *TakeOwnershipError) AttributePath() string { return e.Action + ".take_ownership" }

// Summary is the diagnostic's summary.
func (e *TakeOwnershipError) Summary() string { return "Objects belong to another owner" }

// Advice says what to do.
func (e *TakeOwnershipError) Advice() string {
	return "remove the objects from the chart, rename them, or have their owner let go of them (uninstall that release, " +
		"remove them from that resource); a Helm release made outside stevedore is adopted whole with an import"
}

// takesOwnership says whether act runs Helm with take_ownership.
func takesOwnership(act Action, spec *Spec) bool {
	switch act {
	case ActionInstall:
		return spec.Install.TakeOwnership
	case ActionUpgrade, ActionUpgradeFailed:
		return spec.Upgrade.TakeOwnership
	}
	return false
}

// takeovers is what act, decided on s, takes with take_ownership: the
// objects of the manifest it would apply (rendered as Helm's client-side
// dry run renders it) that are not in the release it upgrades, that exist,
// and that do not carry this release's Helm metadata (those Helm adopts
// without the switch). An object another owner holds is a
// *TakeOwnershipError. nil without take_ownership.
func (r *actionRequest) takeovers(ctx context.Context, act Action, s releaseState) ([]Takeover, error) {
	if !takesOwnership(act, r.spec) {
		return nil, nil
	}
	dry, err := r.sess.dryRun()
	if err != nil {
		return nil, err
	}
	in := newInstall(dry.config(nil), r.spec, r.name, r.sess.releaseNS, s)
	in.DryRunStrategy = action.DryRunClient
	in.IsUpgrade = act != ActionInstall
	rel, err := runRelease(in.RunWithContext(ctx, r.chart, r.values))
	if err != nil {
		// The action itself will fail on the same: it says why.
		return nil, nil
	}
	mapper, err := r.sess.f.RESTMapper()
	if err != nil {
		return nil, err
	}
	objs, err := takeoverCandidates(rel, mapper)
	if err != nil {
		return nil, err
	}
	current := map[string]bool{}
	if act != ActionInstall && s.rls != nil {
		if cur, err := driftObjects(s.rls, mapper); err == nil {
			for _, o := range cur {
				current[objectKey(o)] = true
			}
		}
	}
	c, err := r.sess.f.Client()
	if err != nil {
		return nil, err
	}
	var taken []Takeover
	var owned []string
	for _, o := range objs {
		if current[objectKey(o)] {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			if apierrors.IsNotFound(err) || kube.IsNoKindMatch(err) {
				continue
			}
			return nil, fmt.Errorf("read %s: %w", kube.Describe(o), err)
		}
		switch owner := r.ownerOf(live); {
		case owner == nil:
			continue // this release's: Helm adopts it anyway
		case owner.Kind == kube.OwnedByNobody:
			taken = append(taken, Takeover{Object: kube.Describe(live), Managers: fieldManagers(live)})
		default:
			owned = append(owned, fmt.Sprintf("%s belongs to %s", kube.Describe(live), owner))
		}
	}
	if len(owned) > 0 {
		action := actionInstall
		if act != ActionInstall {
			action = actionUpgrade
		}
		return nil, &TakeOwnershipError{Action: action, Owned: owned}
	}
	return taken, nil
}

// takeoverCandidates are the objects of rel's manifest that can exist in the
// cluster: those of the kinds it serves, each in its namespace. An object of
// a kind the cluster does not serve (a custom resource whose
// CustomResourceDefinition the chart's crds/ installs first) cannot exist
// yet: there is nothing of it to take, or to refuse. The other objects are
// still checked: one kind the mapper does not know must not hide another
// owner's ConfigMap.
func takeoverCandidates(rel *helmrelease.Release, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	objs, err := kube.ReadObjects(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("read the manifest to install: %w", err)
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		namespaced, err := isNamespacedKind(mapper, obj.GroupVersionKind())
		if kube.IsNoKindMatch(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kube.Describe(obj), err)
		}
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(rel.Namespace)
		}
		out = append(out, obj)
	}
	return out, nil
}

// ownerOf is the owner of live, nil when it is this release's (its Helm
// metadata name this release, or its origin labels this resource).
func (r *actionRequest) ownerOf(live *unstructured.Unstructured) *kube.Owner {
	a := live.GetAnnotations()
	if a["meta.helm.sh/release-name"] == r.name && a["meta.helm.sh/release-namespace"] == r.sess.releaseNS {
		return nil
	}
	o := kube.OwnerOf(live.GetLabels(), a)
	if o.Kind == kube.OwnedByRelease && o.Name == r.spec.Name && o.Namespace == r.spec.Namespace {
		// This resource's origin labels and no Helm metadata: left by an
		// earlier release of this resource. Taken, and listed.
		return &kube.Owner{}
	}
	return &o
}

// objectKey identifies an object by group, kind, namespace and name.
func objectKey(o *unstructured.Unstructured) string {
	gvk := o.GroupVersionKind()
	return gvk.Group + "/" + gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// fieldManagers are the managers of live's managed fields, each once, as
// `manager (operation)`.
func fieldManagers(live *unstructured.Unstructured) []string {
	var out []string
	for _, e := range live.GetManagedFields() {
		m := fmt.Sprintf("%s (%s)", e.Manager, e.Operation)
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// checkTakeovers is the check before an install or upgrade with
// take_ownership: an object another owner holds stops the action before
// anything is written.
func (r *actionRequest) checkTakeovers(ctx context.Context, act Action, s releaseState) error {
	_, err := r.takeovers(ctx, act, s)
	return err
}
