package release

import (
	"context"
	"fmt"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// The actions that run Helm, each a runner in its own file (install.go,
// upgrade.go, test.go, rollback_remediation.go, uninstall.go, unlock.go),
// and the bookkeeping they share.

// actionRequest is what an action runner works on, as helm-controller's
// reconcile.Request: the spec, the desired chart and values, the session its
// Helm actions run in, and the status it keeps the books in.
type actionRequest struct {
	spec    *Spec
	sess    *session
	name    string
	chart   *chart.Chart
	values  map[string]any
	desired syncInputs
	st      *Status

	// lastErr is the cause of the latest failure in this apply.
	lastErr error
}

// actionRunner runs one Helm action on the release state s it was decided on
// and records in req.st what it did: the history, the conditions, the failure
// counters (helm-controller's ActionReconciler). A nil error means the apply
// goes on (also after a failure that wrote a release: that is for
// remediation to handle); an error stops it.
type actionRunner interface {
	run(ctx context.Context, req *actionRequest, s releaseState) error
}

// runners are the runners of the actions that run Helm: one per action, each
// in its own file, as helm-controller's internal/reconcile.
var runners = map[Action]actionRunner{
	ActionInstall:       installRunner{},
	ActionUpgrade:       upgradeRunner{},
	ActionUpgradeFailed: upgradeRunner{},
	ActionTest:          testRunner{},
	ActionRollback:      rollbackRunner{},
	ActionUninstall:     uninstallRunner{},
	ActionUnlock:        unlockRunner{},
}

// run runs one action of the state machine on the state s it was decided on.
func (r *request) run(ctx context.Context, act Action, s releaseState) error {
	if act == ActionCorrect {
		return correctDrift(ctx, r.sess.f, r.spec, s.rls, s.drift)
	}
	a, ok := runners[act]
	if !ok {
		return fmt.Errorf("unknown action %q", act)
	}
	return a.run(ctx, &r.actionRequest, s)
}

// recordWrites puts the releases an install or upgrade wrote in the history:
// the newest is this attempt, made from the spec's chart; older ones are
// status changes (superseded) of entries we know.
func (r *actionRequest) recordWrites(obs *observer) bool {
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
func (r *actionRequest) updateKnown(rls *helmrelease.Release) {
	r.st.History = refreshKnown(r.st.History, []*helmrelease.Release{rls})
}

// noteFailure remembers the cause of the latest failure, for the error
// Reconcile returns when it gives up.
func (r *actionRequest) noteFailure(action string, err error) {
	r.lastErr = fmt.Errorf("%s failed: %w", action, err)
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
func (r *actionRequest) recordResult(action string, obs *observer, err error) error {
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
			return actionFailed(action, postRenderClash(r.spec, err))
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
	r.clearFailuresOnRetry(action)
	cur := latest(st.History)
	setCondition(st, CondReleased, "True", out.succeededReason, fmt.Sprintf(out.successFmt, cur.fullName(), cur.chartRef()))
	r.markAwaitingTests()
	summarize(st, spec)
	return nil
}

// markAwaitingTests sets TestSuccess after a release action: Unknown until the
// tests run, or True at once when the filters leave no test hook to run.
func (r *actionRequest) markAwaitingTests() {
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

// interrupted says that the newest release an action wrote is still
// pending: the action failed before Helm could record how it ended.
func interrupted(obs *observer) bool {
	written := obs.releases()
	return len(written) > 0 && written[0].Info != nil && written[0].Info.Status.IsPending()
}

// countFailure counts a failed attempt of action (install or upgrade) against
// its remediation's retries.
func (r *actionRequest) countFailure(action string) {
	switch action {
	case actionInstall:
		r.st.InstallFailures++
	case actionUpgrade:
		r.st.UpgradeFailures++
	}
}

// actionFailed is the error of an action that changed nothing in storage. A
// chart that does not render is the user's input, so the error is on the
// attribute renderErrorPath names (with Helm's template error); a failing
// post-renderer is on post_renderers.
func actionFailed(action string, err error) error {
	msg := err.Error()
	switch {
	case fielderr.PathOf(err) == "post_render_strategy": // postRenderClash
		return &fielderr.Error{Path: "post_render_strategy", Err: fmt.Errorf("%s failed: %w", action, err)}
	case isRenderError(msg):
		return &fielderr.Error{Path: renderErrorPath(msg), Err: fmt.Errorf("%s failed: chart does not render: %w", action, err)}
	case strings.Contains(msg, "error while running post render"):
		return &fielderr.Error{Path: "post_renderers", Err: fmt.Errorf("%s failed: %w", action, err)}
	}
	return fmt.Errorf("%s failed: %w", action, err)
}

// postRenderClash is err with the attribute and the advice it needs when
// kustomize refused two objects of one ID in the stream Helm post-rendered
// and the strategy is combined: a hook and a template of the chart have the
// same kind and name. Any other err is returned as is.
func postRenderClash(spec *Spec, err error) error {
	if err == nil || spec.PostRenderStrategy != PostRenderCombined ||
		!strings.Contains(err.Error(), "may not add resource with an already registered id") {
		return err
	}
	return &fielderr.Error{Path: "post_render_strategy", Err: fmt.Errorf("a hook and a template of the chart have the same kind "+
		"and name, and post_render_strategy %q post-renders hooks and templates in one stream, where kustomize refuses two objects "+
		"of one ID: set post_render_strategy = %q (hooks in their own stream, Helm 4.2) or %q (hooks not post-rendered, Helm 3): %w",
		PostRenderCombined, PostRenderSeparate, PostRenderNoHooks, err)}
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
		strings.Contains(msg, "execution error at "),                              // `fail` and `required` in a template
		strings.Contains(msg, "executing \"") && strings.Contains(msg, "\" at <"): // text/template execution errors, as Helm 4 reformats them
		return "values"
	case strings.Contains(msg, "template: "), // text/template parse errors
		strings.Contains(msg, "parse error at "),      // Helm's engine, reformatted parse errors
		strings.Contains(msg, "YAML parse error on "): // a template that renders invalid YAML
		return "chart"
	}
	return ""
}
