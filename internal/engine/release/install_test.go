package release

import (
	"context"
	"errors"
	"testing"

	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The install runner on Helm's memory driver and fake kube client: the
// conditions, history, storage and counters each outcome leaves.
func TestInstallRunner(t *testing.T) {
	uninstalled := fxRelease(1, helmcommon.StatusUninstalled, map[string]any{"replicaCount": 1})
	for _, tc := range []struct {
		name string
		runnerCase
		want runnerWant
	}{{
		name: "succeeds",
		want: runnerWant{conditions: "Ready=True/InstallSucceeded Released=True/InstallSucceeded",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", lastAction: actionInstall},
	}, {
		name: "starts a new lifecycle over an uninstalled release",
		runnerCase: runnerCase{stored: []*helmrelease.Release{uninstalled},
			status: func(stored []*helmrelease.Release) *Status {
				st := &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall, Failures: 2, InstallFailures: 1}
				setCondition(st, CondTestSuccess, "False", ReasonTestFailed, "old test")
				setCondition(st, CondRemediated, "True", ReasonUninstallSucceeded, "old remediation")
				return st
			}},
		want: runnerWant{conditions: "Ready=True/InstallSucceeded Released=True/InstallSucceeded",
			history: "podinfo.v2:deployed", stored: "podinfo.v2:deployed podinfo.v1:superseded",
			failures: [3]int64{2, 1, 0}, lastAction: actionInstall},
	}, {
		name:       "awaits tests",
		runnerCase: runnerCase{spec: func(s *Spec) { s.Test.Enable = true }, tests: true},
		want: runnerWant{conditions: "Ready=Unknown/AwaitingTests Released=True/InstallSucceeded TestSuccess=Unknown/AwaitingTests",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", lastAction: actionInstall},
	}, {
		name: "has no tests to await when the filters leave none",
		runnerCase: runnerCase{spec: func(s *Spec) {
			s.Test = Test{Enable: true, Filters: []TestFilter{{Name: fxName + "-test", Exclude: true}}}
		}, tests: true},
		want: runnerWant{conditions: "Ready=True/TestSucceeded Released=True/InstallSucceeded TestSuccess=True/TestSucceeded",
			history: "podinfo.v1:deployed", stored: "podinfo.v1:deployed", lastAction: actionInstall},
	}, {
		name: "fails after writing the release",
		runnerCase: runnerCase{kube: failing(&kubefake.FailingKubeClient{WaitError: errors.New("timed out waiting for the condition")}),
			spec: func(s *Spec) { s.Install.Remediation.Retries = 3 }},
		want: runnerWant{conditions: "Ready=False/InstallFailed Released=False/InstallFailed",
			history: "podinfo.v1:failed", stored: "podinfo.v1:failed", failures: [3]int64{1, 1, 0}, lastAction: actionInstall},
	}, {
		name:       "fails without writing a release",
		runnerCase: runnerCase{kube: failing(&kubefake.FailingKubeClient{BuildError: errors.New("no kind Widget")})},
		want: runnerWant{err: "install failed", conditions: "Ready=False/InstallFailed Released=False/InstallFailed",
			failures: [3]int64{1, 0, 0}, lastAction: actionInstall},
	}, {
		name: "interrupted before Helm recorded the outcome",
		runnerCase: runnerCase{kube: failing(&kubefake.FailingKubeClient{WaitError: errors.New("http2: client connection lost")}),
			updateErr: errors.New("no answer from the Kubernetes API server")},
		want: runnerWant{conditions: "Ready=False/InstallFailed Released=False/InstallFailed",
			history: "podinfo.v1:pending-install", stored: "podinfo.v1:pending-install", failures: [3]int64{1, 0, 0}, lastAction: actionInstall},
	}, {
		name:       "loses the name to another apply",
		runnerCase: runnerCase{stored: []*helmrelease.Release{fxRelease(1, helmcommon.StatusDeployed, nil)}},
		want:       runnerWant{err: "another apply installed release podinfo in storage namespace apps first", stored: "podinfo.v1:deployed", lastAction: actionInstall},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			s := releaseState{kind: stateAbsent}
			if len(tc.stored) > 0 {
				s.rls = tc.stored[len(tc.stored)-1]
			}
			err := installRunner{}.run(context.Background(), req, s)
			tc.want.check(t, req, store, err)
		})
	}
}
