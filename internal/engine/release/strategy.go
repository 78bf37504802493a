package release

import (
	"fmt"
	"time"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// Action strategies of install and upgrade (helm-controller 1.4's
// install.strategy.name and upgrade.strategy.name): what follows a failed
// install or upgrade.
//
//   - RemediateOnFailure (the default): the action's remediation settings
//     apply, as before strategies existed (uninstall or roll back, retries).
//   - RetryOnFailure: no remediation runs. helm-controller requeues the
//     HelmRelease after retry_interval and retries the failed release with
//     an upgrade. In Terraform there is no requeue: the apply fails at once,
//     leaving the failed release as it is, and the next apply retries it
//     with an upgrade (decide's stateFailed). retry_interval changes nothing
//     within an apply; it is accepted so that a HelmRelease translates field
//     by field.
const (
	ActionRemediateOnFailure = "RemediateOnFailure"
	ActionRetryOnFailure     = "RetryOnFailure"
	// DefaultRetryInterval is helm-controller's retryInterval default.
	DefaultRetryInterval = 5 * time.Minute
)

// ActionStrategies are the valid strategy names, for validators and messages.
var ActionStrategies = []string{ActionRemediateOnFailure, ActionRetryOnFailure}

// ActionStrategy is install.strategy or upgrade.strategy.
type ActionStrategy struct {
	// Name is one of ActionStrategies; empty means RemediateOnFailure.
	Name string
	// RetryInterval is helm-controller's wait before a retry, allowed with
	// RetryOnFailure only; 0 means DefaultRetryInterval. It does nothing
	// within an apply (see above).
	RetryInterval time.Duration
}

// retries says whether the strategy is RetryOnFailure.
func (a ActionStrategy) retries() bool { return a.Name == ActionRetryOnFailure }

// Interval is the retry interval helm-controller would wait: RetryInterval,
// or DefaultRetryInterval.
func (a ActionStrategy) Interval() time.Duration {
	if a.RetryInterval > 0 {
		return a.RetryInterval
	}
	return DefaultRetryInterval
}

// strategyFor is the strategy of action (install or upgrade) in spec.
func strategyFor(action string, spec *Spec) ActionStrategy {
	switch action {
	case actionInstall:
		return spec.Install.Strategy
	case actionUpgrade:
		return spec.Upgrade.Strategy
	}
	return ActionStrategy{}
}

// activeRetry is the RetryOnFailure strategy of the last release action,
// helm-controller's GetActiveRetry; nil when that action remediates (or
// before any action). The last action is read as activeRemediation reads
// it.
func activeRetry(spec *Spec, st *Status, rls *helmrelease.Release) *retryStrategy {
	action := st.LastAttemptedReleaseAction
	if action == "" {
		action = inferLastAction(rls)
	}
	if s := strategyFor(action, spec); s.retries() {
		return &retryStrategy{action: action, ActionStrategy: s}
	}
	return nil
}

// retryStrategy is a RetryOnFailure strategy with the action it is of.
type retryStrategy struct {
	action string
	ActionStrategy
}

// RetryError ends an apply whose install or upgrade (or the tests after it)
// failed under RetryOnFailure: no remediation ran, the failed release is
// left for the next apply, which retries it with an upgrade.
type RetryError struct {
	Action   string
	Interval time.Duration
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%s.strategy is %s: no remediation ran, the failed release is left as it is, and the next apply "+
		"retries it with an upgrade (helm-controller would retry after %s; within an apply retry_interval changes nothing)",
		e.Action, ActionRetryOnFailure, durationText(e.Interval))
}

// AttributePath names the strategy that stopped the apply.
func (e *RetryError) AttributePath() string { return e.Action + ".strategy" }

// Summary is the diagnostic's summary.
func (e *RetryError) Summary() string { return "Release failed: retry on the next apply" }

// retryStop is the error that ends the round under RetryOnFailure: the
// release is failed again after an install, upgrade or test of this apply
// (helm-controller's ErrRetryAfterInterval, which requeues). nil otherwise.
func (r *request) retryStop(s releaseState, ranRelease bool) error {
	if s.kind != stateFailed || !ranRelease {
		return nil
	}
	rt := activeRetry(r.spec, r.st, s.rls)
	if rt == nil {
		return nil
	}
	return &RetryError{Action: rt.action, Interval: rt.Interval()}
}

// clearFailuresOnRetry is helm-controller's ClearFailures after a release
// action that succeeded under RetryOnFailure: failures count only while
// the release is failed.
func (r *actionRequest) clearFailuresOnRetry(action string) {
	if strategyFor(action, r.spec).retries() {
		r.st.Failures, r.st.InstallFailures, r.st.UpgradeFailures = 0, 0, 0
	}
}

// validateStrategies checks install.strategy and upgrade.strategy as
// helm-controller's CRD does: a known name, and retry_interval only with
// RetryOnFailure.
func validateStrategies(spec *Spec) []error {
	var errs []error
	for _, a := range []struct {
		field string
		s     ActionStrategy
	}{{"install.strategy", spec.Install.Strategy}, {"upgrade.strategy", spec.Upgrade.Strategy}} {
		switch a.s.Name {
		case "", ActionRemediateOnFailure, ActionRetryOnFailure:
		default:
			errs = append(errs, &fielderr.Error{Path: a.field + ".name",
				Err: fmt.Errorf("unknown strategy %q, want %q or %q", a.s.Name, ActionRemediateOnFailure, ActionRetryOnFailure)})
		}
		if a.s.RetryInterval < 0 {
			errs = append(errs, &fielderr.Error{Path: a.field + ".retry_interval", Err: fmt.Errorf("must not be negative")})
		}
		if a.s.RetryInterval != 0 && !a.s.retries() {
			errs = append(errs, &fielderr.Error{Path: a.field + ".retry_interval",
				Err: fmt.Errorf("can only be set when %s.name is %q, as in helm-controller", a.field, ActionRetryOnFailure)})
		}
	}
	return errs
}

// durationText is d as a user writes it: 5m rather than 5m0s.
func durationText(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if len(s) > len(z) && s[len(s)-len(z):] == z {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
