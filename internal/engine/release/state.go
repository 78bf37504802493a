package release

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// stateKind is helm-controller's release state: where the release in storage
// stands against the spec and the status of the last apply.
type stateKind int

const (
	stateAbsent    stateKind = iota // no release, or an uninstalled one
	stateLocked                     // pending-install/upgrade/rollback
	stateUnmanaged                  // not the release our history says we made
	stateOutOfSync                  // chart, values or post-renderers changed
	stateFailed                     // failed release, or failed tests that count
	stateUntested                   // tests enabled and not run for this deployment
	stateDrifted                    // objects differ in the cluster
	stateInSync
)

// rollbackTarget is what became of the release a rollback would return to.
type rollbackTarget int

const (
	targetOK      rollbackTarget = iota
	targetMissing                // no deployed release in the history
	targetCorrupt                // gone from storage or changed there: upgrade instead
)

// releaseState is an observation of the release, with what the decision needs.
type releaseState struct {
	kind   stateKind
	reason string
	rls    *helmrelease.Release // latest in storage; nil when absent
	target rollbackTarget       // for stateFailed with the rollback strategy
	drift  []kube.Drift         // for stateDrifted
}

// syncInputs are the desired chart, values and post-renderers, against which
// a deployed release is in sync or not.
type syncInputs struct {
	chartName, chartVersion string
	chartDigest             string // spec's
	configDigest            string
	prDigest                string
	// knownChartDigest is the chart digest of the last attempt before this
	// apply, the fallback when a history entry does not say its own.
	knownChartDigest string
	// writeOnly are Spec.ValuesWriteOnly, whose paths neither configDigest
	// nor the comparison with the release's values covers.
	writeOnly map[string]any
	// chart is the desired chart, compared by content with the chart Helm
	// stored in a release whose chart digest is unknown (chartDiff).
	chart *chart.Chart
}

// outOfSync says why a deployed release differs from the desired one, or "".
func outOfSync(rls *helmrelease.Release, cur *Snapshot, st *Status, in syncInputs) string {
	if md := rls.Chart.Metadata; md.Name != in.chartName || md.Version != in.chartVersion {
		return fmt.Sprintf("release chart changed: %s@%s -> %s@%s", md.Name, md.Version, in.chartName, in.chartVersion)
	}
	known := cur.ChartDigest
	if known == "" {
		known = in.knownChartDigest
	}
	// An unknown digest (an imported release) is not a change: the chart
	// name and version above are all we can compare.
	if known != "" && in.chartDigest != "" && known != in.chartDigest {
		return "release chart digest changed"
	}
	if known == "" && in.chart != nil {
		// A release whose chart digest is unknown (imported, and no cached
		// archive proven to be its chart): a name and a version do not tell
		// one source's chart from another's, so compare what Helm stored of
		// the release's chart with the desired chart.
		if d := chartDiff(in.chart, rls.Chart); d != "" {
			return "release chart differs from the desired chart of the same name and version: " + d
		}
	}
	live := cur.ConfigDigest
	if len(in.writeOnly) > 0 {
		live = DigestValues(withoutWriteOnly(rls.Config, in.writeOnly))
	}
	if live != in.configDigest {
		return "release config values changed"
	}
	if st.PostRenderersDigest != "" && st.PostRenderersDigest != in.prDigest {
		return "post-renderers changed"
	}
	return ""
}

// observeState reads the latest release and classifies it, as
// helm-controller's DetermineReleaseState; detect runs drift detection when
// the release is otherwise in sync and drift correction is on.
func (r *request) observeState(ctx context.Context, detect bool) (releaseState, error) {
	rls, err := r.lastRelease()
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return releaseState{kind: stateAbsent, reason: "no release in storage"}, nil
	}
	if err != nil {
		return releaseState{}, fmt.Errorf("read release %s from storage namespace %s%s: %w", r.name, r.sess.storageNS, r.sess.describeActor(), err)
	}
	if rls.Info == nil || rls.Chart == nil || rls.Chart.Metadata == nil {
		return releaseState{}, fmt.Errorf("release %s v%d in storage namespace %s is incomplete", rls.Name, rls.Version, r.sess.storageNS)
	}
	if stale(rls.Info.Status) {
		return releaseState{kind: stateLocked, rls: rls, reason: fmt.Sprintf("release with status '%s'", rls.Info.Status)}, nil
	}
	cur := latest(r.st.History)
	if cur == nil {
		if rls.Info.Status == helmcommon.StatusUninstalled {
			return releaseState{kind: stateAbsent, rls: rls, reason: "found uninstalled release in storage"}, nil
		}
		return releaseState{kind: stateUnmanaged, rls: rls, reason: "found existing release in storage"}, nil
	}
	if !cur.targets(rls) || cur.Digest != releaseDigest(rls) {
		return releaseState{kind: stateUnmanaged, rls: rls,
			reason: fmt.Sprintf("release %s/%s.v%d in storage is not the %s this resource made", rls.Namespace, rls.Name, rls.Version, cur.fullName())}, nil
	}
	switch rls.Info.Status {
	case helmcommon.StatusFailed:
		return releaseState{kind: stateFailed, rls: rls, reason: "release is failed", target: r.checkRollbackTarget(rls)}, nil
	case helmcommon.StatusUninstalled:
		return releaseState{kind: stateAbsent, rls: rls, reason: "found uninstalled release in storage"}, nil
	case helmcommon.StatusDeployed:
	default:
		return releaseState{}, fmt.Errorf("unable to determine state for release with status '%s'", rls.Info.Status)
	}
	if reason := outOfSync(rls, cur, r.st, r.desired); reason != "" {
		return releaseState{kind: stateOutOfSync, rls: rls, reason: reason}, nil
	}
	if r.spec.Test.Enable {
		hooks, tested := testResults(rls, r.spec.Test.Filters)
		if !tested {
			return releaseState{kind: stateUntested, rls: rls, reason: "release has not been tested"}, nil
		}
		rem := activeRemediation(r.spec, r.st, rls)
		if rem != nil && !rem.ignoreTests && hasFailedHook(hooks) {
			return releaseState{kind: stateFailed, rls: rls, reason: "release has test in failed phase", target: r.checkRollbackTarget(rls)}, nil
		}
	}
	if detect && r.spec.DriftDetection.Mode.Corrects() {
		drift, fps, err := detectDrift(ctx, r.sess.f, r.spec, rls, r.st.Fingerprints, false)
		if err != nil {
			return releaseState{}, err
		}
		r.st.Drift, r.st.Fingerprints, r.driftFresh = drift, fps, true
		if len(drift) > 0 {
			return releaseState{kind: stateDrifted, rls: rls, drift: drift,
				reason: fmt.Sprintf("%d object(s) of the release differ in the cluster", len(drift))}, nil
		}
	}
	return releaseState{kind: stateInSync, rls: rls, reason: "release is in sync"}, nil
}

// stale reports whether a release with status s was left by an action that did
// not finish: Helm's pending states, and uninstalling, which a destroy that was
// killed leaves. Either is unlocked (marked failed) before anything else, so
// that the next upgrade or uninstall can go on from it.
func stale(s helmcommon.Status) bool {
	return s.IsPending() || s == helmcommon.StatusUninstalling
}

// lastRelease is the latest release in storage: the one refresh read, once,
// when the request has it.
func (r *request) lastRelease() (*helmrelease.Release, error) {
	if rls := r.preread; rls != nil {
		r.preread = nil
		return rls, nil
	}
	return r.sess.storage(nil).Last(r.name)
}

func hasFailedHook(hooks []TestHook) bool {
	for _, h := range hooks {
		if h.Phase == helmrelease.HookPhaseFailed.String() {
			return true
		}
	}
	return false
}

// checkRollbackTarget verifies that the release a rollback would return to is
// still in storage as we recorded it; helm-controller upgrades instead when it
// is not, since rolling back to something else is no remediation.
func (r *request) checkRollbackTarget(cur *helmrelease.Release) rollbackTarget {
	rem := activeRemediation(r.spec, r.st, cur)
	if rem == nil || rem.strategy != StrategyRollback {
		return targetOK
	}
	prev := previousSnapshot(r.st.History, rem.ignoreTests)
	if prev == nil {
		return targetMissing
	}
	rls, err := r.sess.storage(nil).Get(prev.Name, prev.Version)
	if err != nil || releaseDigest(rls) != prev.Digest {
		return targetCorrupt
	}
	return targetOK
}

// remediation is the remediation settings that apply to a failure, with the
// failures counted against them.
type remediation struct {
	action        string // install or upgrade
	retries       int
	failures      int64
	ignoreTests   bool
	remediateLast bool
	strategy      string
}

func (r *remediation) exhausted() bool { return r.retries >= 0 && r.failures > int64(r.retries) }

const (
	actionInstall = "install"
	actionUpgrade = "upgrade"
)

// remediationFor is the remediation settings of action (install or upgrade)
// in spec, with its defaults, and the failures st counts against them.
func remediationFor(action string, spec *Spec, st *Status) *remediation {
	switch action {
	case actionInstall:
		ir := spec.Install.Remediation
		return &remediation{action: action, retries: ir.Retries, failures: st.InstallFailures,
			ignoreTests: *ir.IgnoreTestFailures, remediateLast: *ir.RemediateLastFailure, strategy: StrategyUninstall}
	case actionUpgrade:
		ur := spec.Upgrade.Remediation
		return &remediation{action: action, retries: ur.Retries, failures: st.UpgradeFailures,
			ignoreTests: *ur.IgnoreTestFailures, remediateLast: *ur.RemediateLastFailure, strategy: ur.Strategy}
	}
	return nil
}

// keepsFirstDeployed reports whether an apply that starts with act and
// succeeds leaves the release's first deployment date as it is: Helm's
// upgrade and rollback copy it from the current release, so an upgrade
// keeps it, unless the upgrade's remediation may uninstall the release and
// a retry install it again within the same apply. (Without retries, a
// remediation by uninstall ends the apply in an error.)
func keepsFirstDeployed(act Action, spec *Spec) bool {
	if act != ActionUpgrade && act != ActionUpgradeFailed {
		return false
	}
	ur := spec.Upgrade.Remediation
	return ur.Strategy != StrategyUninstall || ur.Retries == 0 || spec.Upgrade.Strategy.retries()
}

// activeRemediation is the remediation of the last release action, as
// helm-controller's GetActiveRemediation; nil before any.
func activeRemediation(spec *Spec, st *Status, rls *helmrelease.Release) *remediation {
	action := st.LastAttemptedReleaseAction
	if action == "" {
		action = inferLastAction(rls)
	}
	return remediationFor(action, spec, st)
}

// inferLastAction reads the last release action from the release Helm
// stored, for a status that does not record it (state written before the
// field existed, an import, a move from helm_release).
//
// Helm's description says it, unless the install or upgrade was given one
// of its own (`description`, Spec.Description): Helm then writes that
// instead of "Install complete" or "Upgrade complete", and it may read like
// anything, Helm's texts included. Only a release that an action completed
// (deployed, or superseded since) can carry it; Helm overwrites it with its
// own text when the action fails, and unlock, rollback and uninstall write
// theirs. For those releases, when the text is not Helm's, the dates tell:
// an install dates its first and last deployment with the same time, an
// upgrade or a rollback keeps the first deployment of the release it follows.
func inferLastAction(rls *helmrelease.Release) string {
	if rls == nil || rls.Info == nil {
		return ""
	}
	d := rls.Info.Description
	if st := rls.Info.Status; st == helmcommon.StatusDeployed || st == helmcommon.StatusSuperseded {
		switch {
		case d == "Install complete":
			return actionInstall
		case d == "Upgrade complete", helmRollbackDescription.MatchString(d):
			return actionUpgrade
		case GivenDescription(rls) != "":
			switch {
			case rls.Info.LastDeployed.IsZero():
				return "" // undated: nothing tells
			case rls.Info.FirstDeployed.Equal(rls.Info.LastDeployed):
				return actionInstall
			}
			return actionUpgrade
		}
	}
	switch {
	case strings.HasPrefix(d, "Install complete"), strings.HasPrefix(d, "Release \""):
		return actionInstall
	case strings.HasPrefix(d, "Upgrade complete"), strings.HasPrefix(d, "Upgrade \""), strings.HasPrefix(d, "Rollback to"):
		return actionUpgrade
	}
	return ""
}

// GivenDescription is the description that the install or upgrade which
// made rls was given (Spec.Description), or "" when Helm's own text
// describes it: what an import reads back into the configuration's
// `description`, so that the configuration that made the release plans no
// upgrade, and one without a description plans none over Helm's text.
func GivenDescription(rls *helmrelease.Release) string {
	if rls == nil || rls.Info == nil {
		return ""
	}
	if st := rls.Info.Status; st != helmcommon.StatusDeployed && st != helmcommon.StatusSuperseded {
		return "" // a failure, an unlock or an uninstall: Helm's text (see inferLastAction)
	}
	d := rls.Info.Description
	if d == "Install complete" || d == "Upgrade complete" || d == "superseded by new release" || helmRollbackDescription.MatchString(d) {
		return ""
	}
	return d
}

// helmRollbackDescription is Helm's description of a rollback's release.
var helmRollbackDescription = regexp.MustCompile(`^Rollback to [0-9]+$`)

// exhaustedError says remediation is out of retries.
type exhaustedError struct {
	action   string
	failures int64
	retries  int
}

func (e *exhaustedError) Error() string {
	return fmt.Sprintf("%s retries exhausted (%s): %d failure(s) with %s.remediation.retries = %d; "+
		"apply fails until the configuration changes", e.action, ReasonRetriesExceeded, e.failures, e.action, e.retries)
}

// markStalled sets the Stalled condition when err says remediation is out of
// retries, as helm-controller marks a HelmRelease, and clears it otherwise.
func markStalled(st *Status, err error) {
	var ex *exhaustedError
	if !errors.As(err, &ex) {
		deleteCondition(st, CondStalled)
		return
	}
	setCondition(st, CondStalled, "True", ReasonRetriesExceeded, fmt.Sprintf("Failed to %s after %d attempt(s)", ex.action, ex.failures))
}

// forcedAction is what a force request runs instead of decide's action, as
// helm-controller's actionForState handles forceAt: an upgrade of a release
// in sync, an install or upgrade that is out of retries, an upgrade of a
// failed release without remediating it. ok is false where the request
// changes nothing (a locked release is unlocked first; an untested one is
// tested). A drifted release is upgraded too: the user asked for an upgrade,
// and one also corrects what drifted.
func forcedAction(s releaseState, st *Status, spec *Spec) (act Action, reason string, ok bool) {
	// The provider forces for a new force_token, values_wo_version,
	// description, name or namespace (setTriggers): the reasons name them
	// all, as the engine cannot tell which.
	const by = "(a new force_token, values_wo_version, description, name or namespace)"
	const why = "upgrade forced " + by
	switch s.kind {
	case stateInSync, stateDrifted:
		return ActionUpgrade, why, true
	case stateAbsent:
		if remediationFor(actionInstall, spec, st).exhausted() {
			return ActionInstall, "install forced while out of retries " + by, true
		}
	case stateOutOfSync:
		if remediationFor(actionUpgrade, spec, st).exhausted() {
			return ActionUpgrade, "upgrade forced while out of retries " + by, true
		}
	case stateFailed:
		if rem := activeRemediation(spec, st, s.rls); rem != nil && rem.failures > 0 {
			return ActionUpgradeFailed, s.reason + "; " + why, true
		}
	}
	return ActionNone, "", false
}

// decide is the next action for state s, helm-controller's actionForState.
// It is pure: the caller runs the action and observes again.
func decide(s releaseState, st *Status, spec *Spec) (Action, string, error) {
	switch s.kind {
	case stateInSync:
		return ActionNone, s.reason, nil
	case stateLocked:
		return ActionUnlock, "release is locked: " + s.reason, nil
	case stateAbsent:
		if rem := remediationFor(actionInstall, spec, st); rem.exhausted() {
			return ActionNone, "", &exhaustedError{actionInstall, rem.failures, rem.retries}
		}
		return ActionInstall, "release not installed: " + s.reason, nil
	case stateUnmanaged:
		return ActionUpgrade, "release not managed by this resource: " + s.reason, nil
	case stateOutOfSync:
		if rem := remediationFor(actionUpgrade, spec, st); rem.exhausted() {
			return ActionNone, "", &exhaustedError{actionUpgrade, rem.failures, rem.retries}
		}
		return ActionUpgrade, "release out of desired: " + s.reason, nil
	case stateUntested:
		return ActionTest, s.reason, nil
	case stateDrifted:
		if spec.DriftDetection.Mode.Corrects() {
			return ActionCorrect, s.reason, nil
		}
		return ActionNone, s.reason, nil
	case stateFailed:
		if rt := activeRetry(spec, st, s.rls); rt != nil {
			// RetryOnFailure: no remediation, an upgrade retries.
			return ActionUpgradeFailed, fmt.Sprintf("%s; retrying with an upgrade (%s.strategy %s)", s.reason, rt.action, ActionRetryOnFailure), nil
		}
		rem := activeRemediation(spec, st, s.rls)
		if rem == nil {
			return ActionUpgradeFailed, s.reason + "; no remediation applies, upgrading", nil
		}
		if rem.failures <= 0 {
			return ActionUpgradeFailed, s.reason + "; the configuration changed since the failure, upgrading", nil
		}
		if rem.exhausted() && !rem.remediateLast {
			return ActionNone, "", &exhaustedError{rem.action, rem.failures, rem.retries}
		}
		switch rem.strategy {
		case StrategyRollback:
			switch s.target {
			case targetMissing:
				return ActionNone, "", errors.New("upgrade failed and there is no previous release to roll back to")
			case targetCorrupt:
				return ActionUpgradeFailed, s.reason + "; the previous release changed in storage, upgrading instead of rolling back", nil
			}
			return ActionRollback, s.reason + "; rolling back (remediation)", nil
		case StrategyUninstall:
			return ActionUninstall, s.reason + "; uninstalling (remediation)", nil
		default:
			return ActionNone, "", &fielderr.Error{Path: "upgrade.remediation.strategy", Err: fmt.Errorf("unknown remediation strategy %q", rem.strategy)}
		}
	}
	return ActionNone, "", fmt.Errorf("unknown release state %d", s.kind)
}

// actionKind groups actions as helm-controller's reconciler types: one of each
// kind per round.
type actionKind int

const (
	kindRelease actionKind = iota
	kindTest
	kindRemediate
	kindUnlock
	kindDrift
)

func kindOf(a Action) actionKind {
	switch a {
	case ActionTest:
		return kindTest
	case ActionRollback, ActionUninstall:
		return kindRemediate
	case ActionUnlock:
		return kindUnlock
	case ActionCorrect:
		return kindDrift
	}
	return kindRelease
}
