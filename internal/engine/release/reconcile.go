package release

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// request is one Plan or Reconcile of one spec: the desired release, loaded
// and composed, and the status it works on (what the action runners are
// given), with the state of the apply's loop.
type request struct {
	actionRequest

	// deps are the spec's dependencies, read with client; depsMet says an
	// install or upgrade of this apply found them met; acted says an action
	// ran in this apply.
	deps    *kube.Dependencies
	client  client.Reader
	depsMet bool
	acted   bool
	// driftFresh says st.Drift was computed in this apply.
	driftFresh bool
	// forceHandled says the first decision of this apply has been made, and
	// with it the force request, if any, handled: it forces one action.
	forceHandled bool
	// preread is the latest release as refresh read it, for the first
	// observeState of a plan (Engine.read); nil to read storage.
	preread *helmrelease.Release
	// creating says this apply creates the resource: every release it
	// observes is absent or its own (carries its owner ID). Another's,
	// installed after the create first looked, is the race lost, never a
	// release to upgrade.
	creating bool
	// methodChecked says the first action that writes a release has been
	// checked against Spec.PlannedApplyMethod.
	methodChecked bool
}

// decide is the pure decision for state s, with the spec's force request
// handled in the first decision of the request only, as helm-controller
// handles a forceAt once.
func (r *request) decide(s releaseState) (Action, string, error) {
	if r.spec.Force && !r.forceHandled {
		r.forceHandled = true
		if act, reason, ok := forcedAction(s, r.st, r.spec); ok {
			return act, reason, nil
		}
	}
	r.forceHandled = true
	return decide(s, r.st, r.spec)
}

// prepare validates spec, composes its values and loads its chart.
func (e *Engine) prepare(ctx context.Context, spec *Spec, st *Status) (*request, error) {
	if err := validateSpec(spec); err != nil {
		return nil, err
	}
	deps, err := kube.CompileDependencies(spec.Dependencies)
	if err != nil {
		return nil, err
	}
	ch, err := loadChart(spec.ChartPath)
	if err != nil {
		return nil, err
	}
	if err := checkChartDigest(spec); err != nil {
		return nil, err
	}
	c, err := e.kube.Client()
	if err != nil {
		return nil, err
	}
	// values_from is read with the provider's own credentials, as
	// helm-controller reads it with its own, not the service account's.
	values, digested, err := composeValues(ctx, c, spec)
	if err != nil {
		return nil, err
	}
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return nil, err
	}
	// Dependencies too are read with the provider's own credentials, as
	// helm-controller reads a HelmRelease's dependsOn.
	r := &request{actionRequest: actionRequest{spec: spec, sess: sess, name: ReleaseName(spec), chart: ch, values: values, st: st}, deps: deps, client: c}
	r.desired = syncInputs{
		chartName:    ch.Name(),
		chartVersion: ch.Metadata.Version,
		chartDigest:  spec.ChartDigest,
		configDigest: DigestValues(digested),
		prDigest:     renderDigest(spec),
		writeOnly:    spec.ValuesWriteOnly,
		chart:        ch,
	}
	return r, nil
}

func loadChart(path string) (*chart.Chart, error) {
	if path == "" {
		return nil, &fielderr.Error{Path: "chart.path", Err: errors.New("must be set")}
	}
	if _, err := os.Stat(path); err != nil {
		return nil, &fielderr.Error{Path: "chart.path", Err: fmt.Errorf("chart %s: %w", path, err)}
	}
	ch, err := loader.Load(path)
	if err != nil {
		return nil, &fielderr.Error{Path: "chart.path", Err: fmt.Errorf("load chart %s: %w", path, err)}
	}
	if err := ch.Validate(); err != nil {
		return nil, &fielderr.Error{Path: "chart.path", Err: fmt.Errorf("chart %s: %w", path, err)}
	}
	return ch, nil
}

// checkChartDigest verifies that the archive at the chart path has the
// digest the spec names: the digest is what state records as the installed
// chart, so a wrong one would make state lie. A chart directory has no
// archive digest to check.
func checkChartDigest(spec *Spec) error {
	if spec.ChartDigest == "" {
		return nil
	}
	f, err := os.Open(spec.ChartPath)
	if err != nil {
		return &fielderr.Error{Path: "chart.path", Err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.IsDir() {
		return nil
	}
	got, err := digest.Canonical.FromReader(f)
	if err != nil {
		return &fielderr.Error{Path: "chart.path", Err: fmt.Errorf("read %s: %w", spec.ChartPath, err)}
	}
	if got.String() != spec.ChartDigest {
		return &fielderr.Error{Path: "chart.digest",
			Err: fmt.Errorf("%s is not the digest of the archive at chart.path %s, which is %s", spec.ChartDigest, spec.ChartPath, got)}
	}
	return nil
}

// startAttempt records what this apply attempts, as helm-controller's
// LastAttempted* fields, and resets the failure counters when the
// configuration, the chart or the values changed (helm-controller's
// mustResetFailureCounts): failures of an old configuration say nothing of a
// new one.
func (r *request) startAttempt(prev *Status) {
	if prev != nil {
		r.desired.knownChartDigest = prev.ChartDigest
		if r.spec.ResetFailures || prev.ChartDigest != r.desired.chartDigest || prev.ConfigDigest != r.desired.configDigest {
			r.st.Failures, r.st.InstallFailures, r.st.UpgradeFailures = 0, 0, 0
		}
	}
	r.st.ChartDigest, r.st.ConfigDigest = r.desired.chartDigest, r.desired.configDigest
}

// reconcile runs helm-controller's atomic release loop until the release is
// in sync or remediation gives up.
//
// A round runs each kind of action at most once, re-deciding after every
// action, and ends after a remediation, as a helm-controller reconcile does;
// where helm-controller requeues, we start the next round at once, so that one
// apply retries as often as the controller would over several reconciles.
func (r *request) reconcile(ctx context.Context) error {
	start := time.Now()
	for rounds := 1; ; rounds++ {
		if rounds > maxRounds {
			return r.withCause(fmt.Errorf("remediation did not settle after %d rounds", maxRounds))
		}
		remediated, err := r.round(ctx)
		if err != nil || remediated == nil {
			return err
		}
		if err := r.afterRemediation(ctx, start, remediated); err != nil {
			return err
		}
	}
}

// round observes, decides and runs actions, each kind of action at most once,
// until one of its stop rules: the release needs nothing more (in sync, or
// nothing to do: both results nil); an action kind would run twice (stuck);
// an action failed without writing a release; or a remediation ran
// (remediated is the release it remediated: the next round starts, if
// afterRemediation allows).
func (r *request) round(ctx context.Context) (remediated *helmrelease.Release, err error) {
	ran := map[actionKind]bool{}
	driftRechecked := false
	for {
		if err := ctx.Err(); err != nil {
			return nil, r.withCause(fmt.Errorf("apply interrupted: %w", err))
		}
		s, err := r.observeState(ctx, true)
		if err != nil {
			return nil, err
		}
		if r.creating {
			if c := createConflict(s, r.spec, r.sess.storageNS); c != nil {
				c.Raced = true
				return nil, c
			}
		}
		if err := r.retryStop(s, ran[kindRelease] || ran[kindTest]); err != nil {
			return nil, r.withCause(err)
		}
		act, reason, err := r.decide(s)
		if err != nil {
			return nil, r.withCause(err)
		}
		if act == ActionNone {
			if s.kind == stateInSync {
				r.inSync(s.rls)
			}
			return nil, nil
		}
		k := kindOf(act)
		if ran[k] && k == kindDrift && !driftRechecked {
			// A controller writing between detection's read and its
			// dry-run shows as drift: look once more before giving up.
			driftRechecked = true
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
			continue
		}
		if ran[k] {
			return nil, r.stuck(act, s, reason)
		}
		if s.kind == stateFailed {
			// Keep the history to the failure and what a rollback needs.
			if rem := activeRemediation(r.spec, r.st, s.rls); rem != nil {
				r.st.History = truncateHistory(r.st.History, rem.ignoreTests, *r.spec.MaxHistory)
			}
		}
		if err := r.awaitDependencies(ctx, act); err != nil {
			return nil, err
		}
		if err := r.checkPlannedMethod(act, s); err != nil {
			return nil, err
		}
		r.acted = true
		if err := r.run(ctx, act, s); err != nil {
			return nil, err
		}
		ran[k] = true
		if k == kindRemediate {
			return s.rls, nil
		}
	}
}

// afterRemediation is the stop rules between rounds: a remediation that
// failed would fail again at once; retries that are exhausted; unlimited
// retries that have had their time in this apply. nil starts the next round.
func (r *request) afterRemediation(ctx context.Context, start time.Time, remediated *helmrelease.Release) error {
	if c := getCondition(r.st, CondRemediated); c != nil && c.Status == "False" && r.lastErr != nil {
		return r.lastErr
	}
	rem := activeRemediation(r.spec, r.st, remediated)
	if rem != nil && rem.exhausted() {
		return r.withCause(&exhaustedError{rem.action, rem.failures, rem.retries})
	}
	if rem != nil && rem.retries < 0 && !r.mayRetry(ctx, start) {
		return r.withCause(fmt.Errorf("%s failed %d time(s); retries are unlimited, the next apply tries again",
			rem.action, rem.failures))
	}
	return nil
}

// maxRounds bounds the rounds of one apply whatever the retries say: a
// safety net against a state the decisions cycle through without counting a
// failure.
const maxRounds = 100

// mayRetry bounds unlimited retries within one apply: by the context's
// deadline when it has one, else by the spec's timeout.
func (r *request) mayRetry(ctx context.Context, start time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	if _, ok := ctx.Deadline(); ok {
		return true
	}
	return time.Since(start) < r.spec.Timeout
}

// withCause puts the latest failure of this apply in front of err, so that
// "retries exhausted" says what failed; without one (the failure was in an
// earlier apply) the Ready message says it.
func (r *request) withCause(err error) error {
	if r.lastErr != nil {
		return fmt.Errorf("%w; %w", r.lastErr, err)
	}
	if c := getCondition(r.st, CondReady); c != nil && c.Status != "True" && c.Message != "" {
		return fmt.Errorf("%w: %s", err, c.Message)
	}
	return err
}

// stuck is the end of a round that would run an action kind twice.
func (r *request) stuck(act Action, s releaseState, reason string) error {
	if act == ActionCorrect {
		return fmt.Errorf("drift correction did not converge: %s", reason)
	}
	if r.lastErr != nil {
		return r.lastErr
	}
	return fmt.Errorf("%s would run a second time in one apply (%s)", act, reason)
}

// inSync is helm-controller's bookkeeping for a release in desired: the history
// shrinks to what a rollback could need, and a remediation that left the
// release as desired counts as a successful release.
func (r *request) inSync(rls *helmrelease.Release) {
	ignore := r.spec.Test.IgnoreFailures
	if rem := activeRemediation(r.spec, r.st, nil); rem != nil {
		ignore = rem.ignoreTests
	}
	r.st.History = truncateHistory(r.st.History, ignore, *r.spec.MaxHistory)
	if c := getCondition(r.st, CondRemediated); c != nil && c.Status == "True" {
		cur := latest(r.st.History)
		deleteCondition(r.st, CondRemediated)
		setCondition(r.st, CondReleased, "True", ReasonUpgradeSucceeded, fmt.Sprintf(fmtUpgradeSuccess, cur.fullName(), cur.chartRef()))
	}
	if r.spec.Test.Enable && getCondition(r.st, CondTestSuccess) == nil {
		// Tests were just enabled on a tested release (or state lost the
		// condition): say what storage knows of their results.
		cur := latest(r.st.History)
		hooks, _ := testResults(rls, r.spec.Test.Filters)
		switch {
		case hasFailedHook(hooks):
			setCondition(r.st, CondTestSuccess, "False", ReasonTestFailed, fmt.Sprintf(fmtTestFailure, cur.fullName(), cur.chartRef(), "a test hook failed"))
		case len(hooks) == 0:
			setCondition(r.st, CondTestSuccess, "True", ReasonTestSucceeded, fmt.Sprintf(fmtTestSuccess, cur.fullName(), cur.chartRef(), "no test hooks"))
		default:
			setCondition(r.st, CondTestSuccess, "True", ReasonTestSucceeded,
				fmt.Sprintf(fmtTestSuccess, cur.fullName(), cur.chartRef(), fmt.Sprintf("%d test hook(s) completed successfully", len(hooks))))
		}
	}
	summarize(r.st, r.spec)
}

// finish makes the status say what is in storage now.
func (r *request) finish(ctx context.Context) {
	rls, err := r.sess.storage(nil).Last(r.name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		clearRelease(r.st)
	case err == nil:
		setRelease(r.st, rls)
		if rls.Info.Status != helmcommon.StatusDeployed || !r.spec.DriftDetection.Mode.Detects() {
			r.st.Drift, r.st.Fingerprints = nil, nil
		} else if !r.driftFresh {
			// Best effort: a failed detection here must not fail an apply
			// that did its job; refresh reports it.
			drift, fps, err := detectDrift(ctx, r.sess.f, r.spec, rls, r.st.Fingerprints, false)
			if err == nil {
				r.st.Drift, r.st.Fingerprints = drift, fps
			}
		}
	}
	r.st.History = capHistory(r.st.History, *r.spec.MaxHistory)
	summarize(r.st, r.spec)
}

// setRelease copies the latest release's facts into the status.
func setRelease(st *Status, rls *helmrelease.Release) {
	st.Status = rls.Info.Status.String()
	st.Version = rls.Version
	st.FirstDeployed = rls.Info.FirstDeployed
	st.LastDeployed = rls.Info.LastDeployed
	st.ApplyMethod = recordApplyMethod(rls)
	if md := rls.Chart.Metadata; md != nil {
		st.ChartName, st.ChartVersion, st.AppVersion = md.Name, md.Version, md.AppVersion
	}
}

func clearRelease(st *Status) {
	st.Status, st.Version, st.ChartName, st.ChartVersion, st.AppVersion, st.ApplyMethod = "", 0, "", "", "", ""
	st.FirstDeployed, st.LastDeployed = time.Time{}, time.Time{}
	st.Drift, st.Fingerprints = nil, nil
}

// markError records an error that stopped the apply before any action in
// the Ready condition, so that state says why.
func markError(st *Status, err error) {
	var oe *fielderr.ObjectError
	if errors.As(err, &oe) {
		err = oe.Err // the condition is the resource's own: it does not name it
	}
	setCondition(st, CondReady, "False", ReasonReconcileError, err.Error())
}

// cloneStatus is a deep enough copy of prev for the engine to change freely.
func cloneStatus(prev *Status) *Status {
	if prev == nil {
		return &Status{}
	}
	st := *prev
	st.History = make([]Snapshot, len(prev.History))
	for i, s := range prev.History {
		s.TestHooks = append([]TestHook(nil), s.TestHooks...)
		st.History[i] = s
	}
	sortSnapshots(st.History)
	st.Conditions = append([]Condition(nil), prev.Conditions...)
	st.Drift = append(st.Drift[:0:0], prev.Drift...)
	st.Fingerprints = maps.Clone(prev.Fingerprints)
	return &st
}
