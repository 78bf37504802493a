package release

import (
	"context"
	"fmt"
)

// Messages of an upgrade's Released condition, helm-controller's wording.
const (
	fmtUpgradeFailure = "Helm upgrade failed for release %s/%s with chart %s@%s: %s"
	fmtUpgradeSuccess = "Helm upgrade succeeded for release %s with chart %s"
)

// upgradeRunner upgrades the release, as helm-controller's Upgrade
// reconciler: it applies the chart's CRDs with upgrade.crds, undoes what
// failed releases since the deployed one changed (undo.go), and records what
// the upgrade wrote (recordResult). An upgrade of a release made elsewhere
// drops the history, which no longer describes storage.
type upgradeRunner struct{}

func (upgradeRunner) run(ctx context.Context, req *actionRequest, s releaseState) error {
	if err := req.checkTakeovers(ctx, ActionUpgrade, s); err != nil {
		return err // nothing written
	}
	st, spec := req.st, req.spec
	if s.kind == stateUnmanaged {
		// The history describes releases that are not in storage as we saw
		// them: it can no longer be relied on (nor rolled back to).
		st.History = nil
	}
	st.LastAttemptedReleaseAction = actionUpgrade
	deleteCondition(st, CondTestSuccess)
	deleteCondition(st, CondRemediated)

	obs := &observer{}
	cfg := req.sess.config(obs)
	mode := upgradeMode(spec, s.rls)
	err := applyCRDs(ctx, req.sess.f, spec, req.chart, spec.Upgrade.CRDs)
	if err != nil {
		err = fmt.Errorf("apply CustomResourceDefinitions: %w", err)
	} else if err = undoFailedReleases(ctx, req, s.rls, mode); err != nil {
		err = fmt.Errorf("undo what failed releases changed: %w", err)
	} else {
		_, err = newUpgrade(cfg, spec, req.sess.releaseNS, mode).RunWithContext(ctx, req.name, req.chart, req.values)
	}
	return req.recordResult(actionUpgrade, obs, req.explainTimeout(ctx, actionUpgrade, obs, err))
}
