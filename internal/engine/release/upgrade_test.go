package release

import (
	"context"
	"errors"
	"testing"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The upgrade runner on Helm's memory driver and fake kube client: the
// conditions, history, storage and counters each outcome leaves.
func TestUpgradeRunner(t *testing.T) {
	old := map[string]any{"replicaCount": 1}
	deployed := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old)}
	failedUpgrade := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, old), fxRelease(2, helmcommon.StatusFailed, old)}
	made := func(stored []*helmrelease.Release) *Status {
		st := &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall}
		return withConditions(st, CondReleased, "True", ReasonInstallSucceeded, CondTestSuccess, "False", ReasonTestFailed)
	}
	for _, tc := range []struct {
		name string
		runnerCase
		state stateKind
		want  runnerWant
	}{{
		name:       "succeeds",
		runnerCase: runnerCase{stored: deployed, status: made},
		state:      stateOutOfSync,
		want: runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
			history: "podinfo.v2:deployed podinfo.v1:superseded", stored: "podinfo.v2:deployed podinfo.v1:superseded",
			lastAction: actionUpgrade,
			more: func(t *testing.T, st *Status) {
				if cur := latest(st.History); cur.ChartDigest != "sha256:chart" || cur.ConfigDigest != DigestValues(map[string]any{"replicaCount": 2}) {
					t.Errorf("latest entry has chart digest %q and config digest %q", cur.ChartDigest, cur.ConfigDigest)
				}
				if st.PostRenderersDigest != postRenderersDigest(nil) {
					t.Errorf("post-renderers digest %q", st.PostRenderersDigest)
				}
			}},
	}, {
		name: "records the configured values' digest when Helm reuses the previous values",
		runnerCase: runnerCase{stored: deployed, status: made, spec: func(s *Spec) { s.Upgrade.PreserveValues = true },
			values: map[string]any{"extra": true}},
		state: stateOutOfSync,
		want: runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
			history: "podinfo.v2:deployed podinfo.v1:superseded", stored: "podinfo.v2:deployed podinfo.v1:superseded",
			lastAction: actionUpgrade,
			more: func(t *testing.T, st *Status) {
				if got, want := latest(st.History).ConfigDigest, DigestValues(map[string]any{"extra": true}); got != want {
					t.Errorf("config digest %q, want the configured values' %q", got, want)
				}
			}},
	}, {
		name: "fails after writing the release",
		runnerCase: runnerCase{stored: deployed, status: made,
			kube: failing(&kubefake.FailingKubeClient{WaitError: errors.New("timed out waiting for the condition")})},
		state: stateOutOfSync,
		want: runnerWant{conditions: "Ready=False/UpgradeFailed Released=False/UpgradeFailed",
			history: "podinfo.v2:failed podinfo.v1:deployed", stored: "podinfo.v2:failed podinfo.v1:deployed",
			failures: [3]int64{1, 0, 1}, lastAction: actionUpgrade},
	}, {
		name: "fails without writing a release",
		runnerCase: runnerCase{stored: deployed, status: made,
			kube: failing(&kubefake.FailingKubeClient{BuildError: errors.New("no kind Widget")})},
		state: stateOutOfSync,
		want: runnerWant{err: "upgrade failed", conditions: "Ready=False/UpgradeFailed Released=False/UpgradeFailed",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", failures: [3]int64{1, 0, 0}, lastAction: actionUpgrade},
	}, {
		name: "upgrades a failed release, keeping the failure in the history",
		runnerCase: runnerCase{stored: failedUpgrade, status: func(stored []*helmrelease.Release) *Status {
			return &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionUpgrade, Failures: 1, UpgradeFailures: 1}
		}},
		state: stateFailed,
		want: runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
			history: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded", stored: "podinfo.v3:deployed podinfo.v2:failed podinfo.v1:superseded",
			failures: [3]int64{1, 0, 1}, lastAction: actionUpgrade},
	}, {
		name:       "drops the history of a release changed elsewhere",
		runnerCase: runnerCase{stored: deployed, status: func([]*helmrelease.Release) *Status { return &Status{} }},
		state:      stateUnmanaged,
		want: runnerWant{conditions: "Ready=True/UpgradeSucceeded Released=True/UpgradeSucceeded",
			history: "podinfo.v2:deployed", stored: "podinfo.v2:deployed podinfo.v1:superseded", lastAction: actionUpgrade},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			s := releaseState{kind: tc.state, rls: tc.stored[len(tc.stored)-1]}
			err := upgradeRunner{}.run(context.Background(), req, s)
			tc.want.check(t, req, store, err)
		})
	}
}
