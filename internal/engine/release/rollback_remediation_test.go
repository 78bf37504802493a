package release

import (
	"context"
	"errors"
	"testing"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The rollback remediation runner on Helm's memory driver and fake kube
// client: the conditions, history, storage and counters each outcome leaves.
func TestRollbackRunner(t *testing.T) {
	old := map[string]any{"replicaCount": 1}
	failedUpgrade := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old), fxRelease(2, helmcommon.StatusFailed, map[string]any{"replicaCount": 2})}
	failed := func(stored []*helmrelease.Release) *Status {
		st := &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 1, UpgradeFailures: 1}
		return withConditions(st, CondReleased, "False", ReasonUpgradeFailed)
	}
	retries := func(s *Spec) { s.Upgrade.Remediation.Retries = 2 }
	for _, tc := range []struct {
		name string
		runnerCase
		want runnerWant
	}{{
		name:       "rolls back to the previous release",
		runnerCase: runnerCase{stored: failedUpgrade, status: failed, spec: retries},
		want: runnerWant{conditions: "Ready=False/RollbackSucceeded Released=False/UpgradeFailed Remediated=True/RollbackSucceeded",
			// Helm supersedes the deployed releases; the failed one stays failed.
			history: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded", stored: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded",
			failures: [3]int64{1, 0, 1}, lastAction: actionUpgrade,
			more: func(t *testing.T, st *Status) {
				if cur := latest(st.History); cur.ChartDigest != "sha256:chart" || cur.ConfigDigest != DigestValues(old) {
					t.Errorf("the new revision has chart digest %q and config digest %q, want the target's", cur.ChartDigest, cur.ConfigDigest)
				}
			}},
	}, {
		name: "fails after writing a release",
		runnerCase: runnerCase{stored: failedUpgrade, status: failed, spec: retries,
			kube: failing(&kubefake.FailingKubeClient{UpdateError: errors.New("conflict")})},
		want: runnerWant{conditions: "Ready=False/RollbackFailed Released=False/UpgradeFailed Remediated=False/RollbackFailed",
			// Helm supersedes the release it rolled back from, and only that.
			history: "podinfo.v3:failed podinfo.v2:superseded podinfo.v1:deployed", stored: "podinfo.v3:failed podinfo.v2:superseded podinfo.v1:deployed",
			failures: [3]int64{2, 0, 1}, lastAction: actionUpgrade},
	}, {
		name:       "fails without writing a release",
		runnerCase: runnerCase{stored: failedUpgrade, status: failed, spec: retries, createErr: errors.New("no answer from the Kubernetes API server")},
		want: runnerWant{err: "rollback failed", conditions: "Ready=False/RollbackFailed Released=False/UpgradeFailed Remediated=False/RollbackFailed",
			history: "podinfo.v2:failed podinfo.v1:deployed", stored: "podinfo.v2:failed podinfo.v1:deployed",
			failures: [3]int64{2, 0, 1}, lastAction: actionUpgrade},
	}, {
		name: "has no target",
		runnerCase: runnerCase{stored: failedUpgrade[1:], spec: retries, status: func(stored []*helmrelease.Release) *Status {
			return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 1, UpgradeFailures: 1}
		}},
		want: runnerWant{err: "missing target release for rollback", history: "podinfo.v2:failed", stored: "podinfo.v2:failed",
			failures: [3]int64{1, 0, 1}, lastAction: actionUpgrade},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			err := rollbackRunner{}.run(context.Background(), req, releaseState{kind: stateFailed, rls: tc.stored[len(tc.stored)-1]})
			tc.want.check(t, req, store, err)
		})
	}
}
