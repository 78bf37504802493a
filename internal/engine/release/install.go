package release

import (
	"context"
	"fmt"
)

// Messages of an install's Released condition, helm-controller's wording.
const (
	fmtInstallFailure = "Helm install failed for release %s/%s with chart %s@%s: %s"
	fmtInstallSuccess = "Helm install succeeded for release %s with chart %s"
)

// installRunner installs the release, as helm-controller's Install
// reconciler: it starts a new lifecycle (no earlier history, test or
// remediation result applies), applies the chart's CRDs with
// install.crds, and records what the install wrote (recordResult).
type installRunner struct{}

func (installRunner) run(ctx context.Context, req *actionRequest, s releaseState) error {
	if err := req.checkTakeovers(ctx, ActionInstall, s); err != nil {
		return err // nothing written
	}
	st, spec := req.st, req.spec
	st.LastAttemptedReleaseAction = actionInstall
	// An install starts a new lifecycle: nothing before it is a rollback
	// target, and no earlier test or remediation result applies.
	st.History = nil
	deleteCondition(st, CondTestSuccess)
	deleteCondition(st, CondRemediated)

	obs := &observer{}
	cfg := req.sess.config(obs)
	err := applyCRDs(ctx, req.sess.f, spec, req.chart, spec.Install.CRDs)
	if err != nil {
		err = fmt.Errorf("apply CustomResourceDefinitions: %w", err)
	} else {
		_, err = newInstall(cfg, spec, req.name, req.sess.releaseNS, s).RunWithContext(ctx, req.chart, req.values)
	}
	if nameTaken(err) && len(obs.releases()) == 0 {
		// Another apply created the release between our look at storage
		// and Helm's: the API server let exactly one create the record.
		// Nothing of ours was written; this is not a failed install.
		return lostRace(req)
	}
	return req.recordResult(actionInstall, obs, req.explainTimeout(ctx, actionInstall, obs, err))
}

// lostRace is the error of an install that found the release name taken by
// another apply's install, naming its owner.
func lostRace(req *actionRequest) error {
	rls, err := req.sess.storage(nil).Last(req.name)
	if err != nil {
		return fmt.Errorf("another apply installed release %s in storage namespace %s first (reading it failed: %w)", req.name, req.sess.storageNS, err)
	}
	e := existsError(rls, req.spec, req.sess.storageNS)
	e.Raced = true
	return e
}
