package release

import (
	"errors"
	"fmt"
	"strings"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// ExistsError says that a create found a release of the same name in storage
// that this resource instance did not make: another configuration's (even
// one that reuses this resource's name and namespace), a `helm install`, a
// Flux HelmRelease, or this resource's own create that was killed before it
// could save state, which nothing can tell from another's. Taking it over
// would upgrade it now and uninstall it on destroy, so create refuses and the
// provider says how to import it.
type ExistsError struct {
	ReleaseName      string
	StorageNamespace string
	TargetNamespace  string
	Status           string
	Version          int
	Chart            string // name@version
	// Owner is who made the release, as its storage labels and its objects
	// say.
	Owner kube.Owner
	// Raced says that the release appeared while this create was about to
	// install it: another apply won the race for the name.
	Raced bool
	// ImportID is the import ID that brings this release under the resource
	// that found it (see ImportIDOf).
	ImportID string
}

func (e *ExistsError) Error() string {
	var b strings.Builder
	if e.Raced {
		fmt.Fprintf(&b, "another apply installed release %s in storage namespace %s first", e.ReleaseName, e.StorageNamespace)
	} else {
		fmt.Fprintf(&b, "release %s already exists in storage namespace %s", e.ReleaseName, e.StorageNamespace)
	}
	fmt.Fprintf(&b, " (%s, revision %d, chart %s), made by %s", e.Status, e.Version, e.Chart, e.Owner)
	if e.Status == helmcommon.StatusPendingInstall.String() {
		b.WriteString("; it is being installed right now, or an apply was killed while installing it")
	}
	b.WriteString("; stevedore does not take over a release that this resource instance did not install")
	return b.String()
}

// AttributePath is `release_name` (fielderr.Attributed): another name is one
// way out.
func (e *ExistsError) AttributePath() string { return "release_name" }

// Summary is the diagnostic's summary (fielderr.Summarized).
func (e *ExistsError) Summary() string { return "Release already exists" }

// Advice says how to import the release, with its import ID, or, when
// another instance of a stevedore_helmrelease owns it (its owner ID is
// known), which instance that may be and when an import is the right step
// (fielderr.Advised).
func (e *ExistsError) Advice() string {
	id := e.ImportID
	if e.Owner.Kind != kube.OwnedByRelease || e.Owner.ID == "" {
		return fmt.Sprintf("To manage it with this resource, import it (an import block, or terraform import) with the ID %q; "+
			"to install another release, choose another release_name.", id)
	}
	who := fmt.Sprintf("Owner %s is another instance of a stevedore_helmrelease: one in another configuration, "+
		"or an apply of this configuration that was killed before it saved state.", e.Owner.ID)
	if e.Raced {
		who = fmt.Sprintf("Owner %s, another configuration's stevedore_helmrelease, won the race for this release name; "+
			"its apply may still be installing the release.", e.Owner.ID)
	}
	return who + fmt.Sprintf(" If the release is another configuration's, leave it to that one and choose another release_name here. "+
		"Only if it is this configuration's (a killed apply of this one), and once no apply runs for it, import it "+
		"(an import block, or terraform import) with the ID %q.", id)
}

// ConflictWarning is the warning of the plan of a create about Exists, a
// release of the same name already in storage: what apply will do with it.
// Terraform plans the replacement of a tainted resource (one whose create
// failed) as a create, so the plan cannot tell it from a new resource: the
// advice says what happens in either case, and what the plan line says tells
// them apart. It is about the resource, not release_name.
type ConflictWarning struct{ Exists *ExistsError }

func (w *ConflictWarning) Error() string         { return w.Exists.Error() }
func (w *ConflictWarning) Unwrap() error         { return w.Exists }
func (w *ConflictWarning) AttributePath() string { return "" }
func (w *ConflictWarning) Summary() string       { return w.Exists.Summary() }
func (w *ConflictWarning) Advice() string {
	return "Apply refuses to create this resource over it and changes nothing, " +
		"unless Terraform replaces this resource (the plan says it \"must be replaced\"): then the resource's destroy " +
		"uninstalls its release first. " + w.Exists.Advice()
}

// ownerLabels are the labels of the release records spec's instance writes.
func ownerLabels(spec *Spec) map[string]string {
	if spec.Owner == "" {
		return nil
	}
	return map[string]string{kube.OwnerLabel: spec.Owner}
}

// releaseOwner says who made rls: a stevedore resource instance by its owner
// label, else whoever the labels and annotations of its objects name, else
// Helm.
func releaseOwner(rls *helmrelease.Release) kube.Owner {
	var own kube.Owner
	if objs, err := kube.ReadObjects(rls.Manifest); err == nil && len(objs) > 0 {
		own = kube.OwnerOf(objs[0].GetLabels(), objs[0].GetAnnotations())
	}
	if id := rls.Labels[kube.OwnerLabel]; id != "" {
		own.Kind, own.ID = kube.OwnedByRelease, id
	}
	if own.Kind == kube.OwnedByNobody {
		own = kube.Owner{Kind: kube.OwnedByHelm, Namespace: rls.Namespace, Name: rls.Name}
	}
	return own
}

// ownedBy reports whether rls carries spec's owner ID.
func ownedBy(rls *helmrelease.Release, spec *Spec) bool {
	return spec.Owner != "" && rls.Labels[kube.OwnerLabel] == spec.Owner
}

// createConflict is what a create finds in storage that it must not touch, or
// nil. A create goes on over no release, over an uninstalled one kept in
// history (install replaces it, as Helm's --replace does), and over a release
// that carries its own owner ID: what an earlier round of this same apply
// wrote. Anything else belongs to someone it cannot prove is itself.
func createConflict(s releaseState, spec *Spec, storageNS string) *ExistsError {
	rls := s.rls
	if s.kind == stateAbsent || rls == nil || ownedBy(rls, spec) {
		return nil
	}
	return existsError(rls, spec, storageNS)
}

func existsError(rls *helmrelease.Release, spec *Spec, storageNS string) *ExistsError {
	e := &ExistsError{ReleaseName: rls.Name, StorageNamespace: storageNS, TargetNamespace: rls.Namespace, Version: rls.Version,
		ImportID: ImportIDOf(spec, rls.Name, storageNS, rls.Namespace), Owner: releaseOwner(rls)}
	if rls.Info != nil {
		e.Status = rls.Info.Status.String()
	}
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		e.Chart = rls.Chart.Metadata.Name + "@" + rls.Chart.Metadata.Version
	}
	return e
}

// nameTaken reports whether err is Helm's refusal to install over a release
// that appeared since the create looked: its storage's create found the
// record (the API server's AlreadyExists), or its check found the name in
// use (Helm has no typed error for the check: its text is matched).
func nameTaken(err error) bool {
	return errors.Is(err, driver.ErrReleaseExists) || (err != nil && strings.Contains(err.Error(), "cannot reuse a name that is still in use"))
}

// OwnedElsewhereError says that destroy found the release stamped with
// another instance's owner ID: another configuration imported it and upgraded
// it since. Uninstalling it would delete what that configuration manages, so
// destroy leaves it.
type OwnedElsewhereError struct {
	ReleaseName      string
	StorageNamespace string
	Owner            kube.Owner
}

func (e *OwnedElsewhereError) Error() string {
	return fmt.Sprintf("release %s in storage namespace %s is now owned by %s, not by this resource instance; it is left installed",
		e.ReleaseName, e.StorageNamespace, e.Owner)
}

// OwnedError is the refusal of an import that must not adopt imp: a release
// that carries another stevedore_helmrelease instance's owner ID, found by an
// import that cannot tell that instance is its own (an import block by
// identity, which `terraform query -generate-config-out` writes for every
// release it lists). It is create's refusal (ExistsError), whose advice says
// to leave another configuration's release to it, and to import one of this
// configuration's (a killed apply) with its ID, importID. Nil when imp carries
// no owner ID.
func (imp *Imported) OwnedError(importID string) *ExistsError {
	if imp.Owner == "" || imp.Status == nil {
		return nil
	}
	st := imp.Status
	return &ExistsError{ReleaseName: st.ReleaseName, StorageNamespace: st.StorageNamespace, TargetNamespace: imp.TargetNamespace,
		Status: st.Status, Version: st.Version, Chart: st.ChartName + "@" + st.ChartVersion,
		Owner: kube.Owner{Kind: kube.OwnedByRelease, ID: imp.Owner}, ImportID: importID}
}
