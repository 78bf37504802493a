package release

import (
	"fmt"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// How an action writes the release's objects, decided in one place, as
// helm-controller's internal/action resolves it (upgrade.go, rollback.go):
//
//   - an install uses server-side apply when install.server_side_apply says
//     so (default true; false with the provider's helm3_defaults);
//   - an upgrade's mode `auto` takes the method of the latest release, a
//     rollback's that of the revision it rolls back to; `enabled` and
//     `disabled` are server-side and client-side apply;
//   - server-side apply always forces field conflicts, and `force` then
//     means nothing more; under client-side apply `force` replaces objects
//     whose patch fails. Helm refuses both together.
//
// A record without an apply method was written by Helm 3 (or Helm 4 before
// 4.0's server-side apply): client-side.

// recordApplyMethod is the method rls was written with.
func recordApplyMethod(rls *helmrelease.Release) string {
	if rls != nil && rls.ApplyMethod == ApplyMethodSSA {
		return ApplyMethodSSA
	}
	return ApplyMethodCSA
}

// writeMode is how one action writes: its method and the force options Helm
// takes with it.
type writeMode struct {
	// ServerSide is the method: server-side apply, else client-side.
	ServerSide bool
	// ForceConflicts takes fields that other managers own (server-side).
	ForceConflicts bool
	// ForceReplace deletes and recreates an object whose patch fails
	// (client-side).
	ForceReplace bool
}

// Method is ApplyMethodSSA or ApplyMethodCSA.
func (w writeMode) Method() string {
	if w.ServerSide {
		return ApplyMethodSSA
	}
	return ApplyMethodCSA
}

// installMode is how an install writes, for a spec with its defaults. It
// forces no conflict, as helm-controller's install: its objects are new, or
// adopted from the same release name.
func installMode(spec *Spec) writeMode {
	return writeMode{ServerSide: *spec.Install.ServerSideApply}
}

// upgradeMode is how an upgrade from the latest release writes (nil: no
// release, which `auto` reads as client-side, as Helm does for a record
// without a method).
func upgradeMode(spec *Spec, latest *helmrelease.Release) writeMode {
	return modeOf(resolveSSA(spec.Upgrade.ServerSideApply, latest), spec.Upgrade.Force)
}

// rollbackMode is how a rollback to the revision target writes.
func rollbackMode(spec *Spec, target *helmrelease.Release) writeMode {
	return modeOf(resolveSSA(spec.Rollback.ServerSideApply, target), spec.Rollback.Force)
}

// resolveSSA is the method a mode of SSAModes takes for an action that
// applies from rls.
func resolveSSA(mode string, rls *helmrelease.Release) bool {
	switch mode {
	case SSAEnabled:
		return true
	case SSADisabled:
		return false
	}
	return recordApplyMethod(rls) == ApplyMethodSSA
}

func modeOf(serverSide, force bool) writeMode {
	return writeMode{ServerSide: serverSide, ForceConflicts: serverSide, ForceReplace: force && !serverSide}
}

// plannedApplyMethod is the method of the release that an apply starting
// with act leaves when it succeeds, "" when the plan cannot know it: act
// writes no release, or the upgrade's remediation may end the apply on a
// release written another way. hist is the history the apply starts from,
// newest first.
//
// An upgrade with retries that fails is remediated and tried again: by
// uninstall, then an install (installMode); or by a rollback to the
// previous good revision, then an upgrade from that rollback. With `auto`
// the retry takes the rollback's method, which `auto` takes from its
// target: known when the target is the release this upgrade starts from.
func plannedApplyMethod(act Action, spec *Spec, latest *helmrelease.Release, hist []Snapshot) string {
	switch act {
	case ActionInstall:
		return installMode(spec).Method()
	case ActionUpgrade, ActionUpgradeFailed:
	default:
		return ""
	}
	m := upgradeMode(spec, latest).Method()
	ur := spec.Upgrade.Remediation
	switch {
	case ur.Retries == 0: // a failed upgrade ends the apply in an error
		return m
	case ur.Strategy == StrategyUninstall:
		if installMode(spec).Method() == m {
			return m
		}
		return ""
	case spec.Upgrade.ServerSideApply != SSAAuto:
		return m
	}
	rb := ""
	if spec.Rollback.ServerSideApply != SSAAuto {
		rb = rollbackMode(spec, nil).Method()
	} else if t := rollbackTargetAfter(hist, *ur.IgnoreTestFailures); latest != nil && t != nil && t.Version == latest.Version {
		rb = recordApplyMethod(latest)
	}
	if rb == m {
		return m
	}
	return ""
}

// checkPlannedMethod refuses, before it runs, the first action of an apply
// that writes a release with another method than the plan showed
// (Spec.PlannedApplyMethod): another client wrote a revision of the other
// method since the plan, and `auto` follows it.
func (r *request) checkPlannedMethod(act Action, s releaseState) error {
	planned := r.spec.PlannedApplyMethod
	if planned == "" || r.methodChecked {
		return nil
	}
	var m string
	switch act {
	case ActionInstall:
		m = installMode(r.spec).Method()
	case ActionUpgrade, ActionUpgradeFailed:
		m = upgradeMode(r.spec, s.rls).Method()
	default:
		return nil
	}
	r.methodChecked = true
	if m != planned {
		e := &StaleApplyMethodError{Planned: planned, Now: m}
		if s.rls != nil {
			e.Version = s.rls.Version
		}
		return e
	}
	return nil
}

// rollbackTargetAfter is the revision a remediation would roll back to once
// an upgrade failed on top of hist (previousSnapshot of the history then).
func rollbackTargetAfter(hist []Snapshot, ignoreTests bool) *Snapshot {
	return previousSnapshot(append([]Snapshot{{}}, hist...), ignoreTests)
}

// helmSSA is the mode as Helm's upgrade and rollback take it: resolved, so
// that Helm and the engine never decide apart.
func (w writeMode) helmSSA() string { return fmt.Sprint(w.ServerSide) }
