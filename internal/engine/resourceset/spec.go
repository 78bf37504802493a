// Package resourceset renders a matrix of inputs through `<< >>` templates into
// Kubernetes objects, deduplicates them, applies them server-side in stages,
// prunes what left the set, and waits for them with kstatus, with the
// semantics of flux-operator's ResourceSet. It knows nothing of Terraform.
package resourceset

import (
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Labels and annotations the engine reads or writes.
const (
	// NameLabel and NamespaceLabel mark every applied object with the set that
	// owns it; prune only deletes objects that carry both.
	NameLabel      = kube.SetNameLabel
	NamespaceLabel = kube.SetNamespaceLabel

	// ReconcileAnnotation set to DisabledValue on a rendered object drops it.
	ReconcileAnnotation = "fluxcd.controlplane.io/reconcile"
	// PruneAnnotation set to DisabledValue keeps an object in the cluster when
	// it leaves the set.
	PruneAnnotation = "fluxcd.controlplane.io/prune"
	DisabledValue   = "disabled"
)

// Spec is a ResourceSet.
type Spec struct {
	// Name and Namespace identify the set; Namespace is also the namespace of
	// namespaced objects that name none.
	Name      string
	Namespace string
	// Owner is the owner ID of the set's instance (kube.NewOwnerID): every
	// object it applies carries it as the label kube.OwnerLabel, and an
	// object is the set's only when it carries it. Empty for a state written
	// before owners were recorded: the set then owns the objects of its name
	// that carry no owner ID.
	Owner string
	// Creating is the plan of a create: the instance has no owner ID yet,
	// so objects of a set of its name belong to someone it cannot prove is
	// itself (Plan warns; Apply, with an owner ID, refuses them).
	Creating bool
	// TakeOverFrom names the owners (kube.TakeOverNames) whose objects the
	// set may take over: a migration from Helm, Flux or flux-operator.
	TakeOverFrom []string

	// Inputs is the matrix: every resource is rendered once per input, each
	// input with a `provider` key naming the set, as flux-operator's
	// (combinedInputs). No inputs renders everything once, with `inputs`
	// null.
	Inputs []map[string]any
	// InputsFrom are ResourceSetInputProvider objects whose exported inputs
	// join Inputs, read from the cluster by ResolveInputs (which Plan, Apply,
	// Desired and Preview call); InputStrategy is how ("" is Flatten,
	// "Permute" the cartesian product of the set's inputs and each
	// provider's), and IncludeEmptyProviders (Permute only) makes a source
	// without inputs empty the product rather than be skipped. A set with
	// InputsFrom and no inputs at all renders no object, as flux-operator's,
	// rather than everything once.
	InputsFrom            []InputsFrom
	InputStrategy         string
	IncludeEmptyProviders bool
	// inputsResolved is true once exported holds the inputs of InputsFrom,
	// provider by provider, sorted by name.
	inputsResolved bool
	exported       []inputSource
	// Resources are manifests whose strings may hold templates.
	Resources []map[string]any
	// ResourcesTemplate is a multi-document YAML template rendered once per
	// input.
	ResourcesTemplate string
	// Steps, instead of Resources and ResourcesTemplate, render the objects
	// in named parts applied one after the other (see Step).
	Steps []Step

	CommonMetadata CommonMetadata
	Dependencies   []Dependency

	// Wait blocks apply until every object is Current by kstatus.
	Wait bool
	// Timeout bounds waiting for dependencies, for established CRDs and, with
	// Wait, for the objects; it is the timeout of the steps that set none.
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// ServiceAccountName, when set, makes every request impersonate
	// system:serviceaccount:<Namespace>:<ServiceAccountName>.
	ServiceAccountName string
	// Force recreates objects whose immutable fields changed.
	Force bool
}

// CommonMetadata is set on every object, over what the templates set.
type CommonMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// Dependency is an object that must exist (and with Ready, be ready) before the
// set is applied.
type Dependency = kube.Dependency

// DefaultTimeout is the timeout of a set that sets none.
const DefaultTimeout = 5 * time.Minute

// withDefaults is a copy of s with its defaults filled in: the one place they
// are decided. The engine's entry points apply it once; the provider passes
// what the user wrote. A step's timeout defaults to the set's (parts).
func (s *Spec) withDefaults() *Spec {
	d := *s
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	return &d
}
