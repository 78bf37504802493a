package release

import (
	"context"
	"errors"
	"fmt"
	"strings"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// Messages of an unlock's Released condition, helm-controller's wording.
const (
	fmtUnlockFailure = "Unlock of Helm release %s with chart %s in %s state failed: %s"
	fmtUnlockSuccess = "Unlocked Helm release %s with chart %s in %s state"
)

// unlockRunner marks a release that an action left pending (or
// uninstalling) failed, as helm-controller's Unlock reconciler, so that the
// next upgrade or uninstall can go on from it. An unlock is no failed
// attempt of the change: it counts against no retries.
type unlockRunner struct{}

func (unlockRunner) run(_ context.Context, req *actionRequest, _ releaseState) error {
	st, spec := req.st, req.spec
	obs := &observer{}
	store := req.sess.storage(obs)
	rls, err := store.Last(req.name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil // gone meanwhile: the next observation decides
	}
	if err != nil {
		return err
	}
	if !stale(rls.Info.Status) {
		return nil
	}
	snap := snapshotOf(rls, "")
	status := rls.Info.Status
	rls.SetStatus(helmcommon.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", status))
	if err := store.Update(rls); err != nil {
		st.Failures++
		setCondition(st, CondReleased, "False", ReasonPendingRelease, fmt.Sprintf(fmtUnlockFailure, snap.fullName(), snap.chartRef(), status, strings.TrimSpace(err.Error())))
		summarize(st, spec)
		return fmt.Errorf("unlock failed: %w", err)
	}
	for _, w := range obs.releases() {
		req.updateKnown(w)
	}
	setCondition(st, CondReleased, "False", ReasonPendingRelease, fmt.Sprintf(fmtUnlockSuccess, snap.fullName(), snap.chartRef(), status))
	summarize(st, spec)
	return nil
}
