package release

import (
	"context"
	"errors"
	"testing"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The test runner on Helm's memory driver and fake kube client: the
// conditions, test results, storage and counters each outcome leaves.
func TestTestRunner(t *testing.T) {
	installed := []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, nil, withTestHookNotRun,
		func(r *helmrelease.Release) { r.Info.Description = "Install complete" })}
	awaiting := func(stored []*helmrelease.Release) *Status {
		st := &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall}
		return withConditions(st, CondReleased, "True", ReasonInstallSucceeded, CondTestSuccess, "Unknown", ReasonAwaitingTests)
	}
	tests := func(s *Spec) { s.Test.Enable = true }
	hookPhase := func(want string) func(t *testing.T, st *Status) {
		return func(t *testing.T, st *Status) {
			hooks := latest(st.History).TestHooks
			if len(hooks) != 1 || hooks[0].Name != fxName+"-test" || hooks[0].Phase != want {
				t.Errorf("test hooks %+v, want %s-test %s", hooks, fxName, want)
			}
		}
	}
	for _, tc := range []struct {
		name string
		runnerCase
		want runnerWant
	}{{
		name:       "passes",
		runnerCase: runnerCase{stored: installed, status: awaiting, spec: tests},
		want: runnerWant{conditions: "Ready=True/TestSucceeded Released=True/InstallSucceeded TestSuccess=True/TestSucceeded",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", lastAction: actionInstall, more: hookPhase("Succeeded")},
	}, {
		name: "fails, counting against the install's retries",
		runnerCase: runnerCase{stored: installed, status: awaiting, spec: tests,
			kube: failing(&kubefake.FailingKubeClient{WatchUntilReadyError: errors.New("pod podinfo-test failed")})},
		want: runnerWant{conditions: "Ready=False/TestFailed Released=True/InstallSucceeded TestSuccess=False/TestFailed",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", failures: [3]int64{1, 1, 0}, lastAction: actionInstall,
			more: hookPhase("Failed")},
	}, {
		name: "fails, ignored",
		runnerCase: runnerCase{stored: installed, status: awaiting, spec: func(s *Spec) { s.Test = Test{Enable: true, IgnoreFailures: true} },
			kube: failing(&kubefake.FailingKubeClient{WatchUntilReadyError: errors.New("pod podinfo-test failed")})},
		want: runnerWant{conditions: "Ready=True/InstallSucceeded Released=True/InstallSucceeded TestSuccess=False/TestFailed",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", failures: [3]int64{1, 0, 0}, lastAction: actionInstall,
			more: hookPhase("Failed")},
	}, {
		name: "fails to record the results",
		runnerCase: runnerCase{stored: installed, status: awaiting, spec: tests,
			updateErr: errors.New("no answer from the Kubernetes API server")},
		want: runnerWant{err: "test failed", conditions: "Ready=False/TestFailed Released=True/InstallSucceeded TestSuccess=False/TestFailed",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", failures: [3]int64{1, 0, 0}, lastAction: actionInstall},
	}, {
		name:       "has no release to test",
		runnerCase: runnerCase{stored: installed, spec: tests},
		want:       runnerWant{err: "no release to test", stored: "podinfo.v1:deployed"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			err := testRunner{}.run(context.Background(), req, releaseState{kind: stateUntested, rls: tc.stored[0]})
			tc.want.check(t, req, store, err)
		})
	}
}
