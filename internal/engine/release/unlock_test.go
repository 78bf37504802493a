package release

import (
	"context"
	"errors"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// An upgrade that the API server stopped answering in the middle of leaves
// its release pending (Helm could not record how it ended). That is no failed
// attempt of the change: the next apply of the same configuration unlocks
// the release (marks it failed, as helm-controller's unlock does) and upgrades
// again, with remediation.retries = 0 as with any other number. An upgrade
// that Helm recorded as failed does use up the retries, as in Flux.
func TestUnlock_interruptedUpgradeIsNoFailedAttempt(t *testing.T) {
	values := map[string]any{"replicaCount": 2}
	v1 := fxRelease(1, helmcommon.StatusDeployed, map[string]any{"replicaCount": 1})
	for _, tc := range []struct {
		name     string
		written  helmcommon.Status // what storage holds of v2 after the first apply
		failures int64
		next     Action
		exceeded bool
	}{
		{name: "left pending by a stalled API server", written: helmcommon.StatusPendingUpgrade, failures: 0, next: ActionUpgradeFailed},
		{name: "recorded failed by Helm", written: helmcommon.StatusFailed, failures: 1, exceeded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{Name: fxName, Namespace: fxNS, ChartDigest: "sha256:chart"} // upgrade.remediation.retries = 0
			v2 := fxRelease(2, tc.written, values, func(r *helmrelease.Release) { r.Info.Description = "Upgrade \"podinfo\" failed" })

			// The first apply: the upgrade wrote v2 and failed.
			st := &Status{History: fxHistory(v1), LastAttemptedReleaseAction: actionUpgrade}
			first := fxRequest(t, spec, st, values, v1, v2)
			first.chart = &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: "1.0.0"}}
			obs := &observer{}
			obs.record(v2)
			if err := first.recordResult(actionUpgrade, obs, errors.New("no answer from the Kubernetes API server within 30s (kubernetes.request_timeout)")); err != nil {
				t.Fatalf("recordResult: %v", err)
			}
			if st.UpgradeFailures != tc.failures || st.Failures != 1 {
				t.Fatalf("after the first apply: %d upgrade failures, %d failures; want %d, 1", st.UpgradeFailures, st.Failures, tc.failures)
			}

			// The second apply, same configuration, on the same storage.
			ctx := context.Background()
			again := fxRequest(t, spec, st, values, v1, v2)
			s, err := again.observeState(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if tc.written.IsPending() {
				if act, reason, err := again.decide(s); err != nil || act != ActionUnlock {
					t.Fatalf("decision on the pending release: %s (%s, %v), want unlock", act, reason, err)
				}
				if err := again.run(ctx, ActionUnlock, s); err != nil {
					t.Fatalf("unlock: %v", err)
				}
				if st.UpgradeFailures != 0 || st.Failures != 1 {
					t.Fatalf("the unlock counted as a failure: %d upgrade failures, %d failures", st.UpgradeFailures, st.Failures)
				}
				if rls, err := again.lastRelease(); err != nil || rls.Info.Status != helmcommon.StatusFailed {
					t.Fatalf("after the unlock storage holds %+v, %v; want v2 failed", rls, err)
				}
				if s, err = again.observeState(ctx, false); err != nil {
					t.Fatal(err)
				}
			}
			if s.kind != stateFailed {
				t.Fatalf("state %d (%s), want failed", s.kind, s.reason)
			}
			act, reason, err := again.decide(s)
			var ex *exhaustedError
			if tc.exceeded {
				if !errors.As(err, &ex) {
					t.Fatalf("decision %s (%s, %v), want retries exceeded", act, reason, err)
				}
				return
			}
			if err != nil || act != tc.next {
				t.Fatalf("decision %s (%s, %v), want %s", act, reason, err, tc.next)
			}
		})
	}
}

// The unlock runner on Helm's memory driver: the conditions, history,
// storage and counters each outcome leaves.
func TestUnlockRunner(t *testing.T) {
	v1 := fxRelease(1, helmcommon.StatusDeployed, nil)
	pending := func(status helmcommon.Status) []*helmrelease.Release {
		return []*helmrelease.Release{v1, fxRelease(2, status, map[string]any{"replicaCount": 2})}
	}
	upgraded := func(stored []*helmrelease.Release) *Status {
		return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 1}
	}
	for _, tc := range []struct {
		name string
		runnerCase
		want runnerWant
	}{{
		name:       "marks a pending upgrade failed",
		runnerCase: runnerCase{stored: pending(helmcommon.StatusPendingUpgrade), status: upgraded},
		want: runnerWant{conditions: "Ready=False/PendingRelease Released=False/PendingRelease",
			history: "podinfo.v2:failed podinfo.v1:deployed", stored: "podinfo.v2:failed podinfo.v1:deployed",
			failures: [3]int64{1, 0, 0}, lastAction: actionUpgrade},
	}, {
		name:       "marks a release a killed destroy left uninstalling failed",
		runnerCase: runnerCase{stored: pending(helmcommon.StatusUninstalling), status: upgraded},
		want: runnerWant{conditions: "Ready=False/PendingRelease Released=False/PendingRelease",
			history: "podinfo.v2:failed podinfo.v1:deployed", stored: "podinfo.v2:failed podinfo.v1:deployed",
			failures: [3]int64{1, 0, 0}, lastAction: actionUpgrade},
	}, {
		name: "fails to store the release",
		runnerCase: runnerCase{stored: pending(helmcommon.StatusPendingInstall), status: upgraded,
			updateErr: errors.New("no answer from the Kubernetes API server")},
		want: runnerWant{err: "unlock failed", conditions: "Ready=False/PendingRelease Released=False/PendingRelease",
			history: "podinfo.v2:pending-install podinfo.v1:deployed", stored: "podinfo.v2:pending-install podinfo.v1:deployed",
			failures: [3]int64{2, 0, 0}, lastAction: actionUpgrade},
	}, {
		name:       "leaves a release that is no longer pending",
		runnerCase: runnerCase{stored: pending(helmcommon.StatusDeployed), status: upgraded},
		want: runnerWant{history: "podinfo.v2:deployed podinfo.v1:deployed", stored: "podinfo.v2:deployed podinfo.v1:deployed",
			failures: [3]int64{1, 0, 0}, lastAction: actionUpgrade},
	}, {
		name:       "finds the release gone",
		runnerCase: runnerCase{status: func([]*helmrelease.Release) *Status { return &Status{} }},
		want:       runnerWant{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			err := unlockRunner{}.run(context.Background(), req, releaseState{kind: stateLocked})
			tc.want.check(t, req, store, err)
		})
	}
}
