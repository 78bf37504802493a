package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Messages of a rollback's Remediated condition, helm-controller's wording.
const (
	fmtRollbackFailure = "Helm rollback to previous release %s with chart %s failed: %s"
	fmtRollbackSuccess = "Helm rollback to previous release %s with chart %s succeeded"
)

// rollbackRunner remediates a failed upgrade by rolling back to the previous
// release that is deployed or superseded (and passed its tests, unless they
// are ignored), as helm-controller's RollbackRemediation reconciler. The new
// revision is recorded as made of the target's chart.
type rollbackRunner struct{}

func (rollbackRunner) run(_ context.Context, req *actionRequest, _ releaseState) error {
	st, spec := req.st, req.spec
	cur := latest(st.History)
	rem := remediationFor(actionUpgrade, spec, st)
	prev := previousSnapshot(st.History, rem.ignoreTests)
	if cur == nil || prev == nil {
		return errors.New("missing target release for rollback")
	}
	target := *prev
	curDigest := cur.Digest

	obs := &observer{}
	to, err := req.sess.storage(nil).Get(req.name, target.Version)
	if err == nil {
		err = newRollback(req.sess.config(obs), spec, target.Version, rollbackMode(spec, to)).Run(req.name)
	}

	for _, w := range obs.releases() {
		known := false
		for i := range st.History {
			if st.History[i].targets(w) {
				known = true
			}
		}
		if known {
			req.updateKnown(w)
		} else {
			// The new revision is the target's chart again.
			st.History = upsertSnapshot(st.History, snapshotOf(w, target.ChartDigest))
		}
	}
	if err != nil {
		st.Failures++
		setCondition(st, CondRemediated, "False", ReasonRollbackFailed, fmt.Sprintf(fmtRollbackFailure, target.fullName(), target.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		req.noteFailure("rollback", err)
		if nc := latest(st.History); nc == nil || nc.Digest == curDigest {
			return fmt.Errorf("rollback failed: %w", err)
		}
		return nil
	}
	setCondition(st, CondRemediated, "True", ReasonRollbackSucceeded, fmt.Sprintf(fmtRollbackSuccess, target.fullName(), target.chartRef()))
	summarize(st, spec)
	return nil
}
