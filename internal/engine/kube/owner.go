package kube

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// The labels and annotations that say who owns an object or a release. The
// stevedore ones are written by the engines; the others are read to refuse, at
// plan, what another tool manages.
const (
	// OwnerLabel holds the owner ID of the stevedore resource instance that
	// made an object of a resource set, or a release (on its Helm storage
	// records). Two configurations that reuse a name and namespace have two
	// IDs: an owner is an instance, not a name.
	OwnerLabel = OwnerGroup + "/owner"

	// AdoptedAnnotation, on an object a resource set adopted (it existed
	// before the set first applied it), holds the owner ID of the set that
	// adopted it. It is written before the set applies the object, so that
	// what the set did not create can be told after any interruption (an
	// import reads it), and removed when the set lets go of the object.
	AdoptedAnnotation = OwnerGroup + "/adopted-by"

	// SetNameLabel and SetNamespaceLabel name the stevedore_resourceset of an
	// object.
	SetNameLabel      = OwnerGroup + "/resourceset-name"
	SetNamespaceLabel = OwnerGroup + "/resourceset-namespace"
	// ReleaseNameLabel and ReleaseNamespaceLabel name the
	// stevedore_helmrelease of an object (its origin labels).
	ReleaseNameLabel      = OwnerGroup + "/name"
	ReleaseNamespaceLabel = OwnerGroup + "/namespace"

	fluxOperatorNameLabel       = "resourceset.fluxcd.controlplane.io/name"
	fluxOperatorNamespaceLabel  = "resourceset.fluxcd.controlplane.io/namespace"
	fluxHelmNameLabel           = "helm.toolkit.fluxcd.io/name"
	fluxHelmNamespaceLabel      = "helm.toolkit.fluxcd.io/namespace"
	fluxKustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	fluxKustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	helmReleaseNameAnnotation   = "meta.helm.sh/release-name"
	helmReleaseNSAnnotation     = "meta.helm.sh/release-namespace"
	managedByLabel              = "app.kubernetes.io/managed-by"
)

// NewOwnerID returns a new owner ID: 32 random hex digits, a valid label
// value.
func NewOwnerID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux
	}
	return hex.EncodeToString(b)
}

// OwnerKind is the kind of tool that owns an object.
type OwnerKind string

const (
	OwnedByNobody        OwnerKind = ""
	OwnedBySet           OwnerKind = "stevedore_resourceset"
	OwnedByRelease       OwnerKind = "stevedore_helmrelease"
	OwnedByFluxOperator  OwnerKind = "flux-operator ResourceSet"
	OwnedByFluxHelm      OwnerKind = "Flux HelmRelease"
	OwnedByFluxKustomize OwnerKind = "Flux Kustomization"
	OwnedByHelm          OwnerKind = "Helm release"
)

// The owners a configuration may take objects over from, by the names it
// gives them (a resource set's take_over_from). Another stevedore resource's
// objects are never taken over.
const (
	TakeOverHelm         = "helm"
	TakeOverFlux         = "flux"
	TakeOverFluxOperator = "flux-operator"
)

// TakeOverNames are the values take_over_from accepts.
var TakeOverNames = []string{TakeOverHelm, TakeOverFlux, TakeOverFluxOperator}

// Owner is who an object belongs to, as its labels and annotations say.
type Owner struct {
	Kind            OwnerKind
	Namespace, Name string
	// ID is the owner ID of a stevedore owner, "" when it recorded none.
	ID string
}

// TakeOver is the take_over_from name that allows taking an object of this
// owner over, "" when nothing does.
func (o Owner) TakeOver() string {
	switch o.Kind {
	case OwnedByHelm:
		return TakeOverHelm
	case OwnedByFluxHelm, OwnedByFluxKustomize:
		return TakeOverFlux
	case OwnedByFluxOperator:
		return TakeOverFluxOperator
	}
	return ""
}

func (o Owner) String() string {
	s := string(o.Kind)
	if o.Name != "" || o.Namespace != "" {
		s += " " + o.Namespace + "/" + o.Name
	}
	switch {
	case o.ID != "":
		s += " (owner " + o.ID + ")"
	case o.Kind == OwnedBySet:
		// A release's objects carry no owner ID: its storage does.
		s += " (made before owners were recorded)"
	}
	return s
}

// OwnerOf reads the owner of an object from its labels and annotations: a
// stevedore resource set or release first, then flux-operator, Flux and Helm.
// One of a pair of name and namespace labels is enough: whoever wrote it meant
// the object to be theirs.
func OwnerOf(labels, annotations map[string]string) Owner {
	pair := func(nameKey, nsKey string) (string, string, bool) {
		name, hasName := labels[nameKey]
		ns, hasNS := labels[nsKey]
		return name, ns, hasName || hasNS
	}
	if name, ns, ok := pair(SetNameLabel, SetNamespaceLabel); ok {
		return Owner{Kind: OwnedBySet, Namespace: ns, Name: name, ID: labels[OwnerLabel]}
	}
	if name, ns, ok := pair(ReleaseNameLabel, ReleaseNamespaceLabel); ok {
		return Owner{Kind: OwnedByRelease, Namespace: ns, Name: name}
	}
	if name, ns, ok := pair(fluxOperatorNameLabel, fluxOperatorNamespaceLabel); ok {
		return Owner{Kind: OwnedByFluxOperator, Namespace: ns, Name: name}
	}
	if name, ns, ok := pair(fluxHelmNameLabel, fluxHelmNamespaceLabel); ok {
		return Owner{Kind: OwnedByFluxHelm, Namespace: ns, Name: name}
	}
	if name, ns, ok := pair(fluxKustomizeNameLabel, fluxKustomizeNamespaceLabel); ok {
		return Owner{Kind: OwnedByFluxKustomize, Namespace: ns, Name: name}
	}
	name, hasName := annotations[helmReleaseNameAnnotation]
	ns, hasNS := annotations[helmReleaseNSAnnotation]
	if hasName || hasNS || labels[managedByLabel] == "Helm" {
		return Owner{Kind: OwnedByHelm, Namespace: ns, Name: name}
	}
	return Owner{}
}
