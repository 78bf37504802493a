package release

import (
	"context"
	"errors"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// awaitDependencies waits for the spec's dependencies before the first
// action of an apply that installs or upgrades, within the spec's timeout,
// as helm-controller checks dependsOn before it releases. Other actions
// (tests, remediation, drift correction) do not wait.
func (r *request) awaitDependencies(ctx context.Context, act Action) error {
	if r.depsMet || !releases(act) {
		return nil
	}
	if err := r.deps.Wait(ctx, r.client, r.spec.Timeout, kube.DependencyPollInterval); err != nil {
		if nr := (*kube.DependencyNotReadyError)(nil); errors.As(err, &nr) {
			return &DependenciesNotReadyError{Err: err}
		}
		return err
	}
	r.depsMet = true
	return nil
}

// releases reports whether act writes a new release of the configured chart.
func releases(act Action) bool {
	switch act {
	case ActionInstall, ActionUpgrade, ActionUpgradeFailed:
		return true
	}
	return false
}

// DependenciesNotReadyError is an apply that stopped before it installed or
// upgraded because its dependencies were not met in time: it wraps the
// *kube.DependencyNotReadyError that says which, and says that nothing was
// done (fielderr.Summarized, fielderr.Advised).
type DependenciesNotReadyError struct{ Err error }

func (e *DependenciesNotReadyError) Error() string   { return e.Err.Error() }
func (e *DependenciesNotReadyError) Unwrap() error   { return e.Err }
func (e *DependenciesNotReadyError) Summary() string { return "Dependencies not ready" }
func (e *DependenciesNotReadyError) Advice() string {
	return "The release was not installed or upgraded, and no failure was counted: apply again once they are met."
}

// dependencyProblem reports whether err stopped an apply at its
// dependencies: not met in time, or a ready_expr that fails on its object.
func dependencyProblem(err error) bool {
	var nr *kube.DependencyNotReadyError
	return errors.As(err, &nr) || kube.IsDependencyError(err)
}

// untouched is the status of an apply that did nothing because of its
// dependencies: none at create, where no release was made; else prev with
// Ready=False saying why.
func untouched(prev *Status, err error) *Status {
	if prev == nil {
		return nil
	}
	st := cloneStatus(prev)
	markDependencyNotReady(st, err)
	return st
}

func markDependencyNotReady(st *Status, err error) {
	setCondition(st, CondReady, "False", ReasonDependencyNotReady, err.Error())
}
