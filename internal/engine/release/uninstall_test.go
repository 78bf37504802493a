package release

import (
	"context"
	"errors"
	"testing"

	helmkube "helm.sh/helm/v4/pkg/kube"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
)

// The uninstall remediation runner on Helm's memory driver and fake kube
// client: the conditions, history, storage and counters each outcome leaves.
func TestUninstallRunner(t *testing.T) {
	failedInstall := []*helmrelease.Release{fxRelease(1, helmcommon.StatusFailed, nil,
		func(r *helmrelease.Release) { r.Info.Description = `Release "podinfo" failed: timed out` })}
	failed := func(stored []*helmrelease.Release) *Status {
		st := &Status{History: fxHistory(stored...), LastAttemptedReleaseAction: actionInstall, Failures: 1, InstallFailures: 1}
		return withConditions(st, CondReleased, "False", ReasonInstallFailed)
	}
	retries := func(s *Spec) { s.Install.Remediation.Retries = 2 }
	for _, tc := range []struct {
		name string
		runnerCase
		want runnerWant
	}{{
		name:       "uninstalls, purging the release",
		runnerCase: runnerCase{stored: failedInstall, status: failed, spec: retries},
		want: runnerWant{conditions: "Ready=False/UninstallSucceeded Released=False/InstallFailed Remediated=True/UninstallSucceeded",
			history: "podinfo.v1:uninstalled", stored: "", failures: [3]int64{1, 1, 0}, lastAction: actionInstall},
	}, {
		name: "uninstalls, keeping the history",
		runnerCase: runnerCase{stored: failedInstall, status: failed,
			spec: func(s *Spec) { retries(s); s.Uninstall.KeepHistory = true }},
		want: runnerWant{conditions: "Ready=False/UninstallSucceeded Released=False/InstallFailed Remediated=True/UninstallSucceeded",
			history: "podinfo.v1:uninstalled", stored: "podinfo.v1:uninstalled", failures: [3]int64{1, 1, 0}, lastAction: actionInstall},
	}, {
		name: "fails after changing storage",
		runnerCase: runnerCase{stored: failedInstall, status: failed,
			spec: func(s *Spec) { retries(s); s.Uninstall.KeepHistory = true },
			kube: failing(&kubefake.FailingKubeClient{DummyResources: fxResources(), DeleteError: errors.New("forbidden")})},
		want: runnerWant{conditions: "Ready=False/UninstallFailed Released=False/InstallFailed Remediated=False/UninstallFailed",
			// Helm stops at the failed delete: the next apply unlocks it.
			history: "podinfo.v1:uninstalling", stored: "podinfo.v1:uninstalling", failures: [3]int64{2, 1, 0}, lastAction: actionInstall},
	}, {
		// Helm only logs that it could not store the release.
		name: "completes without changing storage",
		runnerCase: runnerCase{stored: failedInstall, status: failed, updateErr: errors.New("no answer from the Kubernetes API server"),
			spec: func(s *Spec) { retries(s); s.Uninstall.KeepHistory = true }},
		want: runnerWant{err: "uninstall completed without updating Helm storage",
			conditions: "Ready=False/UninstallFailed Released=False/InstallFailed Remediated=False/UninstallFailed",
			history:    "podinfo.v1:failed", stored: "podinfo.v1:failed", failures: [3]int64{2, 1, 0}, lastAction: actionInstall},
	}, {
		name:       "has no release to uninstall",
		runnerCase: runnerCase{stored: failedInstall, spec: retries},
		want:       runnerWant{err: "no release to uninstall", stored: "podinfo.v1:failed"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, store := actionFixture(t, tc.runnerCase)
			err := uninstallRunner{}.run(context.Background(), req, releaseState{kind: stateFailed, rls: tc.stored[0]})
			tc.want.check(t, req, store, err)
		})
	}
}

// fxResources is the fixtures' ConfigMap as Helm's kube client builds it,
// with no client: Helm's uninstall deletes it without reading it first (its
// ownership check needs a client).
func fxResources() helmkube.ResourceList {
	return helmkube.ResourceList{&resource.Info{Name: fxName, Namespace: fxNS,
		Mapping: &meta.RESTMapping{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}}}}
}
