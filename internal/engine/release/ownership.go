package release

import (
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// ExistsError says that a create found a release of the same name in storage
// that this resource did not make: another workspace's, a `helm install`, a
// Flux HelmRelease. Taking it over would upgrade it now and uninstall it on
// destroy, so create refuses and the provider says how to import it.
type ExistsError struct {
	ReleaseName      string
	StorageNamespace string
	TargetNamespace  string
	Status           string
	Version          int
	Chart            string // name@version
	// ImportID is the import ID that brings this release under the resource
	// that found it (see ImportIDOf).
	ImportID string
	// MadeHere says that the release's objects carry the origin labels of
	// the resource that found it: a create of that resource made it and
	// failed (Terraform then taints the resource, and its next plan replaces
	// it: uninstall first, then install), or the resource was removed from
	// the state.
	MadeHere bool
}

func (e *ExistsError) Error() string {
	found := fmt.Sprintf("release %s already exists in storage namespace %s (%s, revision %d, chart %s)",
		e.ReleaseName, e.StorageNamespace, e.Status, e.Version, e.Chart)
	if e.MadeHere {
		return found + " and is not in this resource's state, though its objects carry this resource's labels; " +
			"stevedore does not take over a release it does not track"
	}
	return found + " and was not made by this resource; stevedore does not take over a release it did not install"
}

// createConflict is what a create finds in storage that it must not touch, or
// nil. A create may go on over:
//   - no release, or an uninstalled one kept in history (install replaces it,
//     as Helm's --replace does);
//   - the first revision of a release left pending-install by an apply of
//     this resource that was killed before it could save state: its objects
//     carry this resource's origin labels, and nobody else's release does.
func createConflict(s releaseState, spec *Spec, storageNS string) *ExistsError {
	rls := s.rls
	if s.kind == stateAbsent || rls == nil {
		return nil
	}
	if rls.Info != nil && rls.Info.Status == helmrelease.StatusPendingInstall && rls.Version == 1 && madeBy(rls, spec) {
		return nil
	}
	e := &ExistsError{ReleaseName: rls.Name, StorageNamespace: storageNS, TargetNamespace: rls.Namespace, Version: rls.Version,
		ImportID: ImportIDOf(spec, rls.Name, storageNS, rls.Namespace), MadeHere: madeBy(rls, spec)}
	if rls.Info != nil {
		e.Status = rls.Info.Status.String()
	}
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		e.Chart = rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version
	}
	return e
}

// madeBy reports whether every object of rls's manifest carries the origin
// labels that post-rendering puts on the objects of spec's releases. An empty
// manifest proves nothing.
func madeBy(rls *helmrelease.Release, spec *Spec) bool {
	objs, err := kube.ReadObjects(rls.Manifest)
	if err != nil || len(objs) == 0 {
		return false
	}
	for _, o := range objs {
		l := o.GetLabels()
		if l[OriginNameLabel] != spec.Name || l[OriginNamespaceLabel] != spec.Namespace {
			return false
		}
	}
	return true
}
