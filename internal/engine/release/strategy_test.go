package release

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

var retryOnFailure = ActionStrategy{Name: ActionRetryOnFailure}

// decide on a failed release under each strategy: RetryOnFailure upgrades
// where RemediateOnFailure would remediate or stop, and the strategy that
// counts is that of the last release action, as helm-controller's
// GetActiveRetry.
func TestDecide_actionStrategies(t *testing.T) {
	failed := releaseState{kind: stateFailed, reason: "release is failed"}
	for _, tc := range []struct {
		name      string
		st        Status
		spec      Spec
		want      Action
		exhausted bool
	}{
		{name: "failed install, remediate: uninstall", st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1},
			spec: Spec{Install: Install{Remediation: InstallRemediation{Retries: 1}}}, want: ActionUninstall},
		{name: "failed install, retry: upgrade instead of uninstall", st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1},
			spec: Spec{Install: Install{Strategy: retryOnFailure, Remediation: InstallRemediation{Retries: 1}}}, want: ActionUpgradeFailed},
		{name: "failed install out of retries, remediate: stalled", st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 3},
			exhausted: true},
		{name: "failed install out of retries, retry: upgrade", st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 3},
			spec: Spec{Install: Install{Strategy: retryOnFailure}}, want: ActionUpgradeFailed},
		{name: "failed upgrade, remediate: roll back", st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionRollback},
		{name: "failed upgrade, retry: upgrade instead of roll back", st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Strategy: retryOnFailure, Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionUpgradeFailed},
		{name: "failed upgrade, retry: upgrade instead of uninstall", st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 5},
			spec: Spec{Upgrade: Upgrade{Strategy: retryOnFailure, Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, want: ActionUpgradeFailed},
		{name: "failed upgrade, only the install retries: remediate", st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Install: Install{Strategy: retryOnFailure}, Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionRollback},
		{name: "failed install, only the upgrade retries: stalled", st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1},
			spec: Spec{Upgrade: Upgrade{Strategy: retryOnFailure}}, exhausted: true},
		{name: "RemediateOnFailure named is the default", st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Strategy: ActionStrategy{Name: ActionRemediateOnFailure}, Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionRollback},
		{name: "last action read from the release: an upgrade", st: Status{UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Strategy: retryOnFailure, Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionUpgradeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := failed
			s.rls = fxRelease(2, helmcommon.StatusFailed, nil, func(r *helmrelease.Release) { r.Info.Description = "Upgrade \"podinfo\" failed: boom" })
			got, reason, err := decide(s, &tc.st, tc.spec.withDefaults())
			var ex *exhaustedError
			switch {
			case tc.exhausted:
				if !errors.As(err, &ex) {
					t.Fatalf("decide = %s, %v; want retries exhausted", got, err)
				}
				return
			case err != nil:
				t.Fatalf("decide: %v", err)
			}
			if got != tc.want {
				t.Errorf("decide = %s (%s), want %s", got, reason, tc.want)
			}
			if got == ActionUpgradeFailed && tc.want == ActionUpgradeFailed && !strings.Contains(reason, ActionRetryOnFailure) {
				t.Errorf("reason %q does not name the strategy", reason)
			}
		})
	}
}

// retryStop ends a round only on a failed release after a release action
// (or the tests after it) of this apply, and only under RetryOnFailure.
func TestRetryStop(t *testing.T) {
	failed := releaseState{kind: stateFailed, rls: fxRelease(2, helmcommon.StatusFailed, nil)}
	for _, tc := range []struct {
		name       string
		s          releaseState
		strategy   ActionStrategy
		ranRelease bool
		want       string // "" for nil, else the error's text
	}{
		{"failed again after an upgrade, retry", failed, ActionStrategy{Name: ActionRetryOnFailure, RetryInterval: 90 * time.Second}, true,
			"upgrade.strategy is RetryOnFailure: no remediation ran, the failed release is left as it is, and the next apply retries it with an upgrade (helm-controller would retry after 1m30s; within an apply retry_interval changes nothing)"},
		{"failed again, default interval", failed, retryOnFailure, true, "helm-controller would retry after 5m;"},
		{"failed at the start of the apply: retried first", failed, retryOnFailure, false, ""},
		{"failed after an upgrade, remediate", failed, ActionStrategy{}, true, ""},
		{"deployed after an upgrade, retry", releaseState{kind: stateInSync}, retryOnFailure, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := (&Spec{Upgrade: Upgrade{Strategy: tc.strategy}}).withDefaults()
			r := &request{actionRequest: actionRequest{spec: spec, st: &Status{LastAttemptedReleaseAction: actionUpgrade}}}
			err := r.retryStop(tc.s, tc.ranRelease)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("retryStop = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("retryStop = %v, want %q", err, tc.want)
			case err != nil && err.(fielderr.Attributed).AttributePath() != "upgrade.strategy":
				t.Errorf("error on %q, want upgrade.strategy", err.(fielderr.Attributed).AttributePath())
			}
		})
	}
}

// One round of helm-controller's loop on Helm's memory storage, with an
// upgrade whose wait fails: RemediateOnFailure rolls back in the same
// apply (a third revision); RetryOnFailure stops with the failed revision
// in storage and the failure counted, and the next apply's round upgrades it
// again (no rollback) and, when that upgrade succeeds, clears the counters.
func TestRound_retryOnFailureRunsNoRemediation(t *testing.T) {
	old := map[string]any{"replicaCount": 1}
	stored := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old)}
	made := func(stored []*helmrelease.Release) *Status {
		return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall}
	}
	waitFails := failing(&kubefake.FailingKubeClient{WaitError: errors.New("timed out waiting for the condition")})
	round := func(t *testing.T, c runnerCase) (*request, releaseStore, *helmrelease.Release, error) {
		t.Helper()
		req, store := actionFixture(t, c)
		r := &request{actionRequest: *req}
		remediated, err := r.round(context.Background())
		return r, store, remediated, err
	}

	t.Run("RemediateOnFailure rolls back", func(t *testing.T) {
		r, store, remediated, err := round(t, runnerCase{stored: stored, status: made, kube: waitFails,
			spec: func(s *Spec) { s.Upgrade.Remediation.Retries = 1 }})
		if err != nil || remediated == nil {
			t.Fatalf("round = %v, %v; want a remediation", remediated, err)
		}
		// The rollback ran (the fake client's wait fails it too).
		if _, err := store.Get(fxName, 3); err != nil || getCondition(r.st, CondRemediated) == nil {
			t.Errorf("no rollback (storage %s, conditions %s): %v", storageOf(t, store), conditionsOf(r.st), err)
		}
		if r.st.UpgradeFailures != 1 {
			t.Errorf("upgrade failures %d, want 1", r.st.UpgradeFailures)
		}
	})

	t.Run("RetryOnFailure stops with the failed release", func(t *testing.T) {
		r, store, remediated, err := round(t, runnerCase{stored: stored, status: made, kube: waitFails,
			spec: func(s *Spec) { s.Upgrade.Remediation.Retries = 1; s.Upgrade.Strategy = retryOnFailure }})
		var re *RetryError
		if !errors.As(err, &re) || remediated != nil {
			t.Fatalf("round = %v, %v; want a *RetryError", remediated, err)
		}
		if !strings.Contains(err.Error(), "upgrade failed: timed out waiting for the condition") {
			t.Errorf("error %q does not say what failed", err)
		}
		if got, want := storageOf(t, store), "podinfo.v2:failed podinfo.v1:deployed"; got != want {
			t.Errorf("storage %q, want %q: no rollback", got, want)
		}
		if got := [3]int64{r.st.Failures, r.st.InstallFailures, r.st.UpgradeFailures}; got != [3]int64{1, 0, 1} {
			t.Errorf("failures %v, want [1 0 1]", got)
		}
		if c := getCondition(r.st, CondRemediated); c != nil {
			t.Errorf("Remediated condition %+v: nothing was remediated", c)
		}

		// The next apply: the failed release is retried with an upgrade,
		// whose failure stops the apply again, with no rollback.
		failedStored := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old), fxRelease(2, helmcommon.StatusFailed, map[string]any{"replicaCount": 2})}
		next := func(stored []*helmrelease.Release) *Status {
			return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 1, UpgradeFailures: 1}
		}
		r2, store2, _, err := round(t, runnerCase{stored: failedStored, status: next, kube: waitFails,
			spec: func(s *Spec) { s.Upgrade.Remediation.Retries = 1; s.Upgrade.Strategy = retryOnFailure }})
		if !errors.As(err, &re) {
			t.Fatalf("second round: %v, want a *RetryError", err)
		}
		if got, want := storageOf(t, store2), "podinfo.v3:failed podinfo.v2:failed podinfo.v1:deployed"; got != want {
			t.Errorf("second round: storage %q, want %q", got, want)
		}
		if r2.st.UpgradeFailures != 2 {
			t.Errorf("second round: upgrade failures %d, want 2", r2.st.UpgradeFailures)
		}

		// An apply whose retry succeeds: the counters are cleared.
		r3, store3, _, err := round(t, runnerCase{stored: failedStored, status: next,
			spec: func(s *Spec) {
				s.Upgrade.Remediation.Retries = 1
				s.Upgrade.Strategy = retryOnFailure
				s.DriftDetection.Mode = DriftDisabled // no cluster to read here
			}})
		if err != nil {
			t.Fatalf("third round: %v", err)
		}
		if got, want := storageOf(t, store3), "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded"; got != want {
			t.Errorf("third round: storage %q, want %q", got, want)
		}
		if got := [3]int64{r3.st.Failures, r3.st.InstallFailures, r3.st.UpgradeFailures}; got != [3]int64{} {
			t.Errorf("third round: failures %v, want cleared", got)
		}
	})
}

// The upgrade runner under RetryOnFailure: a success clears the counters
// (helm-controller's ClearFailures); under RemediateOnFailure they stay.
func TestUpgradeRunner_retryOnFailureClearsFailures(t *testing.T) {
	old := map[string]any{"replicaCount": 1}
	failedUpgrade := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old), fxRelease(2, helmcommon.StatusFailed, old)}
	status := func(stored []*helmrelease.Release) *Status {
		return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 2, InstallFailures: 1, UpgradeFailures: 1}
	}
	for _, tc := range []struct {
		name     string
		strategy ActionStrategy
		want     [3]int64
	}{
		{"RemediateOnFailure keeps them", ActionStrategy{}, [3]int64{2, 1, 1}},
		{"RetryOnFailure clears them", retryOnFailure, [3]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, runnerCase{stored: failedUpgrade, status: status, spec: func(s *Spec) { s.Upgrade.Strategy = tc.strategy }})
			err := upgradeRunner{}.run(context.Background(), req, releaseState{kind: stateFailed, rls: failedUpgrade[1]})
			runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
				history: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded", stored: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded",
				failures: tc.want, lastAction: actionUpgrade}.check(t, req, store, err)
		})
	}
}

// An upgrade under RetryOnFailure never uninstalls, so it keeps the first
// deployment date even with uninstall remediation and retries.
func TestKeepsFirstDeployed_retryOnFailure(t *testing.T) {
	s := (&Spec{Upgrade: Upgrade{Strategy: retryOnFailure, Remediation: UpgradeRemediation{Retries: 2, Strategy: StrategyUninstall}}}).withDefaults()
	if !keepsFirstDeployed(ActionUpgrade, s) {
		t.Error("keepsFirstDeployed = false under RetryOnFailure")
	}
	s.Upgrade.Strategy = ActionStrategy{}
	if keepsFirstDeployed(ActionUpgrade, s) {
		t.Error("keepsFirstDeployed = true under RemediateOnFailure with uninstall and retries")
	}
}

// Bad strategies are errors on the attribute at fault, as helm-controller's
// CRD validation refuses them.
func TestValidateStrategies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		install  ActionStrategy
		upgrade  ActionStrategy
		wantPath []string
	}{
		{name: "none"},
		{name: "both named", install: ActionStrategy{Name: ActionRemediateOnFailure}, upgrade: ActionStrategy{Name: ActionRetryOnFailure, RetryInterval: time.Minute}},
		{name: "unknown name", install: ActionStrategy{Name: "RetryForever"}, wantPath: []string{"install.strategy.name"}},
		{name: "interval with RemediateOnFailure", upgrade: ActionStrategy{Name: ActionRemediateOnFailure, RetryInterval: time.Minute},
			wantPath: []string{"upgrade.strategy.retry_interval"}},
		{name: "interval without a name", upgrade: ActionStrategy{RetryInterval: time.Minute}, wantPath: []string{"upgrade.strategy.retry_interval"}},
		{name: "negative interval", install: ActionStrategy{Name: ActionRetryOnFailure, RetryInterval: -time.Second},
			wantPath: []string{"install.strategy.retry_interval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateStrategies(&Spec{Install: Install{Strategy: tc.install}, Upgrade: Upgrade{Strategy: tc.upgrade}})
			var got []string
			for _, e := range errs {
				got = append(got, fielderr.PathOf(e))
			}
			if strings.Join(got, ",") != strings.Join(tc.wantPath, ",") {
				t.Errorf("errors on %v (%v), want on %v", got, errs, tc.wantPath)
			}
		})
	}
}
