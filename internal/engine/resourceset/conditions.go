package resourceset

import "github.com/fluxcd/pkg/apis/meta"

// Reasons of the Ready condition: those flux-operator documents for a
// ResourceSet.
const (
	// ReasonSucceeded: the set is applied, pruned and, with Wait, healthy.
	ReasonSucceeded = meta.ReconciliationSucceededReason
	// ReasonDependencyNotReady: a dependency was missing or not ready when the
	// timeout ran out.
	ReasonDependencyNotReady = meta.DependencyNotReadyReason
	// ReasonBuildFailed: the spec cannot be built (templates, dependencies);
	// nothing was applied.
	ReasonBuildFailed = meta.BuildFailedReason
	// ReasonReconciliationFailed: the client, the adoption check, the apply or
	// the prune failed.
	ReasonReconciliationFailed = meta.ReconciliationFailedReason
	// ReasonHealthCheckFailed: with Wait, an object did not become Current.
	ReasonHealthCheckFailed = meta.HealthCheckFailedReason
)
