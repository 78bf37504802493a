package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Messages of the conditions, helm-controller's wording.
const (
	fmtInstallFailure   = "Helm install failed for release %s/%s with chart %s@%s: %s"
	fmtInstallSuccess   = "Helm install succeeded for release %s with chart %s"
	fmtUpgradeFailure   = "Helm upgrade failed for release %s/%s with chart %s@%s: %s"
	fmtUpgradeSuccess   = "Helm upgrade succeeded for release %s with chart %s"
	fmtTestPending      = "Helm release %s with chart %s is awaiting tests"
	fmtTestFailure      = "Helm test failed for release %s with chart %s: %s"
	fmtTestSuccess      = "Helm test succeeded for release %s with chart %s: %s"
	fmtRollbackFailure  = "Helm rollback to previous release %s with chart %s failed: %s"
	fmtRollbackSuccess  = "Helm rollback to previous release %s with chart %s succeeded"
	fmtUninstallFailure = "Helm uninstall remediation for release %s with chart %s failed: %s"
	fmtUninstallSuccess = "Helm uninstall remediation for release %s with chart %s succeeded"
	fmtUnlockFailure    = "Unlock of Helm release %s with chart %s in %s state failed: %s"
	fmtUnlockSuccess    = "Unlocked Helm release %s with chart %s in %s state"
)

// actionTimeout is an action's own timeout, else the spec's, else the default.
func actionTimeout(own, spec time.Duration) time.Duration {
	if own > 0 {
		return own
	}
	if spec > 0 {
		return spec
	}
	return DefaultTimeout
}

// run runs one action of the state machine on the state s it was decided on.
// A nil error means the loop goes on (also after a failure that wrote a
// release: that is for remediation to handle); an error stops it.
func (r *request) run(ctx context.Context, act Action, s releaseState) error {
	switch act {
	case ActionInstall:
		return r.install(ctx, s)
	case ActionUpgrade, ActionUpgradeFailed:
		return r.upgrade(ctx, s)
	case ActionTest:
		return r.test()
	case ActionRollback:
		return r.rollback()
	case ActionUninstall:
		return r.uninstallRemediation()
	case ActionUnlock:
		return r.unlock()
	case ActionCorrect:
		return correctDrift(ctx, r.sess.f, r.spec, s.rls, s.drift)
	}
	return fmt.Errorf("unknown action %q", act)
}

// recordWrites puts the releases an install or upgrade wrote in the history:
// the newest is this attempt, made from the spec's chart; older ones are
// status changes (superseded) of entries we know.
func (r *request) recordWrites(obs *observer) bool {
	written := obs.releases()
	for i, rls := range written {
		if i == 0 {
			r.st.History = upsertSnapshot(r.st.History, snapshotOf(rls, r.spec.ChartDigest))
			continue
		}
		r.updateKnown(rls)
	}
	return len(written) > 0
}

// updateKnown refreshes the history entry of rls, if there is one.
func (r *request) updateKnown(rls *helmrelease.Release) {
	r.st.History = refreshKnown(r.st.History, []*helmrelease.Release{rls})
}

// noteFailure remembers the cause of the latest failure, for the error
// Reconcile returns when it gives up.
func (r *request) noteFailure(action string, err error) {
	r.lastErr = fmt.Errorf("%s failed: %w", action, err)
}

func (r *request) install(ctx context.Context, s releaseState) error {
	st, spec := r.st, r.spec
	st.LastAttemptedReleaseAction = actionInstall
	// An install starts a new lifecycle: nothing before it is a rollback
	// target, and no earlier test or remediation result applies.
	st.History = nil
	deleteCondition(st, CondTestSuccess)
	deleteCondition(st, CondRemediated)

	obs := &observer{}
	cfg := r.sess.config(obs)
	err := applyCRDs(ctx, r.sess.f, spec, r.chart, orDefault(spec.Install.CRDs, CRDsCreate))
	if err != nil {
		err = fmt.Errorf("apply CustomResourceDefinitions: %w", err)
	} else {
		_, err = newInstall(cfg, spec, r.name, r.sess.releaseNS, s).RunWithContext(ctx, r.chart, r.values)
	}
	if nameTaken(err) && len(obs.releases()) == 0 {
		// Another apply created the release between our look at storage
		// and Helm's: the API server let exactly one create the record.
		// Nothing of ours was written; this is not a failed install.
		return r.lostRace()
	}
	return r.recordResult(actionInstall, obs, r.explainTimeout(ctx, actionInstall, obs, err))
}

// lostRace is the error of an install that found the release name taken by
// another apply's install, naming its owner.
func (r *request) lostRace() error {
	rls, err := r.sess.storage(nil).Last(r.name)
	if err != nil {
		return fmt.Errorf("another apply installed release %s in storage namespace %s first (reading it failed: %w)", r.name, r.sess.storageNS, err)
	}
	e := existsError(rls, r.spec, r.sess.storageNS)
	e.Raced = true
	return e
}

func (r *request) upgrade(ctx context.Context, s releaseState) error {
	st, spec := r.st, r.spec
	if s.kind == stateUnmanaged {
		// The history describes releases that are not in storage as we saw
		// them: it can no longer be relied on (nor rolled back to).
		st.History = nil
	}
	st.LastAttemptedReleaseAction = actionUpgrade
	deleteCondition(st, CondTestSuccess)
	deleteCondition(st, CondRemediated)

	obs := &observer{}
	cfg := r.sess.config(obs)
	err := applyCRDs(ctx, r.sess.f, spec, r.chart, orDefault(spec.Upgrade.CRDs, CRDsSkip))
	if err != nil {
		err = fmt.Errorf("apply CustomResourceDefinitions: %w", err)
	} else if err = r.undoFailedReleases(ctx, s.rls); err != nil {
		err = fmt.Errorf("undo what failed releases changed: %w", err)
	} else {
		_, err = newUpgrade(cfg, spec, r.sess.releaseNS).RunWithContext(ctx, r.name, r.chart, r.values)
	}
	return r.recordResult(actionUpgrade, obs, r.explainTimeout(ctx, actionUpgrade, obs, err))
}

// releaseOutcome is what an install or an upgrade records: helm-controller's
// success() and failure() of its Install and Upgrade reconcilers.
var releaseOutcome = map[string]struct {
	failureFmt, successFmt        string
	failedReason, succeededReason string
}{
	actionInstall: {fmtInstallFailure, fmtInstallSuccess, ReasonInstallFailed, ReasonInstallSucceeded},
	actionUpgrade: {fmtUpgradeFailure, fmtUpgradeSuccess, ReasonUpgradeFailed, ReasonUpgradeSucceeded},
}

// recordResult is the bookkeeping of an install or upgrade (action) that
// wrote what obs saw and ended with err: the history, the post-renderers
// digest, the Released condition and the failure counters. A failure that
// wrote no release has nothing to remediate: its error stops the apply, and
// the next apply simply tries again.
func (r *request) recordResult(action string, obs *observer, err error) error {
	st, spec, out := r.st, r.spec, releaseOutcome[action]
	wrote := r.recordWrites(obs)
	if wrote {
		st.PostRenderersDigest = r.desired.prDigest
		if action == actionUpgrade && spec.Upgrade.PreserveValues {
			// Helm stores the configured values merged over the previous
			// release's: their digest is not the configuration's, and the
			// release would never be in sync with it (an upgrade on every
			// apply). The revision records the digest of what was
			// configured, so that only a change of it upgrades again.
			latest(st.History).ConfigDigest = r.desired.configDigest
		}
	}
	if err != nil {
		st.Failures++
		msg := fmt.Sprintf(out.failureFmt, r.sess.releaseNS, r.name, r.chart.Name(), r.chart.Metadata.Version, strings.TrimSpace(err.Error()))
		setCondition(st, CondReleased, "False", out.failedReason, msg)
		summarize(st, spec)
		r.noteFailure(action, err)
		if !wrote {
			return actionFailed(action, err)
		}
		if interrupted(obs) {
			// Helm could not record the outcome (the API server stopped
			// answering): the release is left pending, the next apply
			// unlocks it (marks it failed) and runs the change again. An
			// interrupted attempt, like the unlock, is no failed attempt of
			// the change, so it uses up no retry.
			return nil
		}
		r.countFailure(action)
		return nil
	}
	cur := latest(st.History)
	setCondition(st, CondReleased, "True", out.succeededReason, fmt.Sprintf(out.successFmt, cur.fullName(), cur.chartRef()))
	r.markAwaitingTests()
	summarize(st, spec)
	return nil
}

// markAwaitingTests sets TestSuccess after a release action: Unknown until the
// tests run, or True at once when the filters leave no test hook to run.
func (r *request) markAwaitingTests() {
	if !r.spec.Test.Enable {
		return
	}
	cur := latest(r.st.History)
	rls, err := r.sess.storage(nil).Get(cur.Name, cur.Version)
	if err == nil && len(selectedTestHooks(rls, r.spec.Test.Filters)) == 0 {
		setCondition(r.st, CondTestSuccess, "True", ReasonTestSucceeded, fmt.Sprintf(fmtTestSuccess, cur.fullName(), cur.chartRef(), "no test hooks"))
		return
	}
	setCondition(r.st, CondTestSuccess, "Unknown", ReasonAwaitingTests, fmt.Sprintf(fmtTestPending, cur.fullName(), cur.chartRef()))
}

func (r *request) test() error {
	st, spec := r.st, r.spec
	cur := latest(st.History)
	if cur == nil {
		return errors.New("no release to test")
	}
	obs := &observer{}
	rls, err := newTest(r.sess.config(obs), spec, r.sess.releaseNS).Run(r.name)
	if rls != nil && !cur.targets(rls) && err == nil {
		// Helm tests the latest release; results for another are not ours.
		err = fmt.Errorf("tested release %s/%s.v%d is not the current release %s", rls.Namespace, rls.Name, rls.Version, cur.fullName())
	}
	tested := false
	for _, w := range obs.releases() {
		if cur.targets(w) {
			hooks, _ := testResults(w, spec.Test.Filters)
			cur.TestHooks = hooks
			tested = true
		}
	}
	if err != nil {
		st.Failures++
		setCondition(st, CondTestSuccess, "False", ReasonTestFailed, fmt.Sprintf(fmtTestFailure, cur.fullName(), cur.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		r.noteFailure("test", err)
		if !tested {
			return fmt.Errorf("test failed: %w", err)
		}
		if rem := activeRemediation(spec, st, rls); rem != nil && !rem.ignoreTests {
			r.countFailure(rem.action)
		}
		return nil
	}
	n := len(cur.TestHooks)
	msg := "no test hooks"
	if n > 0 {
		msg = fmt.Sprintf("%d test hook(s) completed successfully", n)
	}
	setCondition(st, CondTestSuccess, "True", ReasonTestSucceeded, fmt.Sprintf(fmtTestSuccess, cur.fullName(), cur.chartRef(), msg))
	summarize(st, spec)
	return nil
}

// interrupted says that the newest release an action wrote is still
// pending: the action failed before Helm could record how it ended.
func interrupted(obs *observer) bool {
	written := obs.releases()
	return len(written) > 0 && written[0].Info != nil && written[0].Info.Status.IsPending()
}

func (r *request) countFailure(action string) {
	switch action {
	case actionInstall:
		r.st.InstallFailures++
	case actionUpgrade:
		r.st.UpgradeFailures++
	}
}

func (r *request) rollback() error {
	st, spec := r.st, r.spec
	cur := latest(st.History)
	rem := remediationFor(actionUpgrade, spec, st)
	prev := previousSnapshot(st.History, rem.ignoreTests)
	if cur == nil || prev == nil {
		return errors.New("missing target release for rollback")
	}
	target := *prev
	curDigest := cur.Digest

	obs := &observer{}
	err := newRollback(r.sess.config(obs), spec, target.Version).Run(r.name)

	for _, w := range obs.releases() {
		known := false
		for i := range st.History {
			if st.History[i].targets(w) {
				known = true
			}
		}
		if known {
			r.updateKnown(w)
		} else {
			// The new revision is the target's chart again.
			st.History = upsertSnapshot(st.History, snapshotOf(w, target.ChartDigest))
		}
	}
	if err != nil {
		st.Failures++
		setCondition(st, CondRemediated, "False", ReasonRollbackFailed, fmt.Sprintf(fmtRollbackFailure, target.fullName(), target.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		r.noteFailure("rollback", err)
		if nc := latest(st.History); nc == nil || nc.Digest == curDigest {
			return fmt.Errorf("rollback failed: %w", err)
		}
		return nil
	}
	setCondition(st, CondRemediated, "True", ReasonRollbackSucceeded, fmt.Sprintf(fmtRollbackSuccess, target.fullName(), target.chartRef()))
	summarize(st, spec)
	return nil
}

func (r *request) uninstallRemediation() error {
	st, spec := r.st, r.spec
	cur := latest(st.History)
	if cur == nil {
		return errors.New("no release to uninstall")
	}
	before := *cur
	obs := &observer{}
	_, err := newUninstall(r.sess.config(obs), spec).Run(r.name)

	changed := false
	for _, w := range obs.releases() {
		if before.targets(w) {
			r.updateKnown(w)
			changed = true
		}
	}
	for _, d := range obs.deleted {
		if before.targets(d) {
			// Purged (no keep_history): what remains is our record of it.
			c := latest(st.History)
			c.Status = helmrelease.StatusUninstalled.String()
			if c.Deleted.IsZero() && d.Info != nil {
				c.Deleted = d.Info.Deleted.Time
			}
			changed = true
		}
	}
	if err == nil && !changed {
		err = errors.New("uninstall completed without updating Helm storage")
	}
	if err != nil {
		st.Failures++
		setCondition(st, CondRemediated, "False", ReasonUninstallFailed, fmt.Sprintf(fmtUninstallFailure, before.fullName(), before.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		r.noteFailure("uninstall", err)
		if !changed {
			return fmt.Errorf("uninstall failed: %w", err)
		}
		return nil
	}
	setCondition(st, CondRemediated, "True", ReasonUninstallSucceeded, fmt.Sprintf(fmtUninstallSuccess, before.fullName(), before.chartRef()))
	summarize(st, spec)
	return nil
}

func (r *request) unlock() error {
	st, spec := r.st, r.spec
	obs := &observer{}
	store := r.sess.config(obs).Releases
	rls, err := store.Last(r.name)
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
	rls.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", status))
	if err := store.Update(rls); err != nil {
		st.Failures++
		setCondition(st, CondReleased, "False", ReasonPendingRelease, fmt.Sprintf(fmtUnlockFailure, snap.fullName(), snap.chartRef(), status, strings.TrimSpace(err.Error())))
		summarize(st, spec)
		return fmt.Errorf("unlock failed: %w", err)
	}
	for _, w := range obs.releases() {
		r.updateKnown(w)
	}
	setCondition(st, CondReleased, "False", ReasonPendingRelease, fmt.Sprintf(fmtUnlockSuccess, snap.fullName(), snap.chartRef(), status))
	summarize(st, spec)
	return nil
}

func orDefault(p, def CRDPolicy) CRDPolicy {
	if p == "" {
		return def
	}
	return p
}

// actionFailed is the error of an action that changed nothing in storage. A
// chart that does not render is the user's input, so the error is on the
// attribute renderErrorPath names (with Helm's template error); a failing
// post-renderer is on post_renderers.
func actionFailed(action string, err error) error {
	msg := err.Error()
	switch {
	case isRenderError(msg):
		return &fielderr.Error{Path: renderErrorPath(msg), Err: fmt.Errorf("%s failed: chart does not render: %w", action, err)}
	case strings.Contains(msg, "error while running post render"):
		return &fielderr.Error{Path: "post_renderers", Err: fmt.Errorf("%s failed: %w", action, err)}
	}
	return fmt.Errorf("%s failed: %w", action, err)
}

// isRenderError recognizes Helm's template engine errors by their text: Helm
// returns them unwrapped and untyped.
func isRenderError(msg string) bool {
	return renderErrorPath(msg) != ""
}

// renderErrorPath is the attribute a Helm render error is about: `values`
// for values that the chart's schema refuses and for a template that fails
// on the values it is given (`fail`, `required`, a template that cannot
// execute with them); `chart` for a chart whose templates do not parse or
// render invalid YAML; "" for an error that is no render error.
func renderErrorPath(msg string) string {
	switch {
	case strings.Contains(msg, "values don't meet the specifications of the schema"),
		strings.Contains(msg, "execution error at "),                                 // `fail` and `required` in a template
		strings.Contains(msg, "template: ") && strings.Contains(msg, ": executing "): // text/template execution errors
		return "values"
	case strings.Contains(msg, "template: "), // text/template parse errors
		strings.Contains(msg, "parse error at "),      // Helm's engine, reformatted parse errors
		strings.Contains(msg, "YAML parse error on "): // a template that renders invalid YAML
		return "chart"
	}
	return ""
}
