package release

import (
	"context"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// The state classification, helm-controller's DetermineReleaseState, on
// Helm's in-memory storage: no cluster, every state from fixtures.

const (
	fxName = "podinfo"
	fxNS   = "apps"
)

// fxRelease is revision v of the fixture release with status and values;
// opts change it further.
func fxRelease(v int, status helmcommon.Status, values map[string]any, opts ...func(*helmrelease.Release)) *helmrelease.Release {
	rls := &helmrelease.Release{
		Name: fxName, Namespace: fxNS, Version: v,
		Info: &helmrelease.Info{
			Status:        status,
			Description:   "Upgrade complete",
			FirstDeployed: time.Unix(1_700_000_000, 0),
			LastDeployed:  time.Unix(1_700_000_000+int64(v), 0),
		},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: "1.0.0"}},
		Config: values,
	}
	for _, o := range opts {
		o(rls)
	}
	return rls
}

// withTestHook gives a release a test hook that ran after it was deployed,
// with phase.
func withTestHook(phase helmrelease.HookPhase) func(*helmrelease.Release) {
	return func(rls *helmrelease.Release) {
		ran := time.Unix(rls.Info.LastDeployed.Unix()+10, 0)
		rls.Hooks = append(rls.Hooks, &helmrelease.Hook{
			Name: fxName + "-test", Events: []helmrelease.HookEvent{helmrelease.HookTest},
			LastRun: helmrelease.HookExecution{StartedAt: ran, CompletedAt: ran, Phase: phase},
		})
	}
}

// withTestHookNotRun gives a release a test hook that never ran.
func withTestHookNotRun(rls *helmrelease.Release) {
	rls.Hooks = append(rls.Hooks, &helmrelease.Hook{Name: fxName + "-test", Events: []helmrelease.HookEvent{helmrelease.HookTest}})
}

// fxStorage is Helm's memory driver holding rls.
func fxStorage(t *testing.T, rls ...*helmrelease.Release) driver.Driver {
	t.Helper()
	mem := driver.NewMemory()
	mem.SetNamespace(fxNS)
	st := storage.Init(mem)
	for _, r := range rls {
		if err := st.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

// fxRequest is a request for spec and st on storage holding stored, whose
// desired chart is the fixtures' and desired values are config.
func fxRequest(t *testing.T, spec *Spec, st *Status, config map[string]any, stored ...*helmrelease.Release) *request {
	t.Helper()
	return &request{actionRequest: actionRequest{
		spec: spec.withDefaults(), st: st, name: fxName,
		sess:    &session{driver: fxStorage(t, stored...), storageNS: fxNS, releaseNS: fxNS},
		desired: syncInputs{chartName: "podinfo", chartVersion: "1.0.0", chartDigest: spec.ChartDigest, configDigest: DigestValues(config)},
	}}
}

// fxHistory is the history this resource would have recorded for rls,
// newest first.
func fxHistory(rls ...*helmrelease.Release) []Snapshot {
	h := make([]Snapshot, 0, len(rls))
	for i := len(rls) - 1; i >= 0; i-- {
		h = append(h, snapshotOf(rls[i], "sha256:chart"))
	}
	return h
}

func TestObserveState_stateAndRollbackTarget(t *testing.T) {
	values := map[string]any{"replicaCount": 1}
	v1 := fxRelease(1, helmcommon.StatusSuperseded, values)
	v1Deployed := fxRelease(1, helmcommon.StatusDeployed, values)
	v2Failed := fxRelease(2, helmcommon.StatusFailed, values)
	v2Deployed := fxRelease(2, helmcommon.StatusDeployed, values)
	untested := fxRelease(1, helmcommon.StatusDeployed, values, withTestHookNotRun)
	changed := fxRelease(1, helmcommon.StatusSuperseded, map[string]any{"replicaCount": 3})
	tested := func(phase helmrelease.HookPhase) *helmrelease.Release {
		return fxRelease(1, helmcommon.StatusDeployed, values, withTestHook(phase))
	}
	tests := func(s *Spec) { s.Test.Enable = true }
	retries := func(s *Spec) { s.Upgrade.Remediation.Retries = 3 }

	cases := []struct {
		name    string
		stored  []*helmrelease.Release
		history []Snapshot
		spec    func(*Spec)
		status  func(*Status)
		config  map[string]any // desired values; nil means values
		want    stateKind
		target  rollbackTarget
	}{
		{name: "no release", want: stateAbsent},
		{name: "uninstalled and not ours", stored: []*helmrelease.Release{fxRelease(1, helmcommon.StatusUninstalled, values)}, want: stateAbsent},
		{name: "pending upgrade is locked", stored: []*helmrelease.Release{v1, fxRelease(2, helmcommon.StatusPendingUpgrade, values)},
			history: fxHistory(v1), want: stateLocked},
		{name: "pending install without history is locked", stored: []*helmrelease.Release{fxRelease(1, helmcommon.StatusPendingInstall, values)}, want: stateLocked},
		{name: "a release this resource did not make", stored: []*helmrelease.Release{v1Deployed}, want: stateUnmanaged},
		{name: "a newer revision by another client", stored: []*helmrelease.Release{v1, v2Deployed}, history: fxHistory(v1Deployed), want: stateUnmanaged},
		{name: "digest mismatch: the release changed in storage", stored: []*helmrelease.Release{v1Deployed},
			history: fxHistory(fxRelease(1, helmcommon.StatusDeployed, map[string]any{"replicaCount": 2})), want: stateUnmanaged},
		{name: "values out of sync", stored: []*helmrelease.Release{v1Deployed}, history: fxHistory(v1Deployed),
			config: map[string]any{"replicaCount": 2}, want: stateOutOfSync},
		{name: "chart digest out of sync", stored: []*helmrelease.Release{v1Deployed}, history: fxHistory(v1Deployed),
			spec: func(s *Spec) { s.ChartDigest = "sha256:other" }, want: stateOutOfSync},
		{name: "in sync", stored: []*helmrelease.Release{v1Deployed}, history: fxHistory(v1Deployed), want: stateInSync},
		{name: "untested", stored: []*helmrelease.Release{untested}, history: fxHistory(untested), spec: tests, want: stateUntested},
		{name: "a chart without tests needs no test run", stored: []*helmrelease.Release{v1Deployed}, history: fxHistory(v1Deployed), spec: tests, want: stateInSync},
		{name: "tests passed", stored: []*helmrelease.Release{tested(helmrelease.HookPhaseSucceeded)},
			history: fxHistory(tested(helmrelease.HookPhaseSucceeded)), spec: tests, want: stateInSync},
		{name: "failed test", stored: []*helmrelease.Release{tested(helmrelease.HookPhaseFailed)},
			history: fxHistory(tested(helmrelease.HookPhaseFailed)), spec: tests,
			status: func(s *Status) { s.LastAttemptedReleaseAction = actionUpgrade }, want: stateFailed, target: targetMissing},
		{name: "failed test ignored", stored: []*helmrelease.Release{tested(helmrelease.HookPhaseFailed)},
			history: fxHistory(tested(helmrelease.HookPhaseFailed)), spec: func(s *Spec) { s.Test.Enable, s.Test.IgnoreFailures = true, true },
			want: stateInSync},
		{name: "failed upgrade, rollback target in storage", stored: []*helmrelease.Release{v1, v2Failed},
			history: fxHistory(v1, v2Failed), spec: retries, want: stateFailed, target: targetOK},
		{name: "failed upgrade, no rollback target", stored: []*helmrelease.Release{v1, v2Failed},
			history: fxHistory(v2Failed), spec: retries, want: stateFailed, target: targetMissing},
		{name: "failed upgrade, rollback target changed in storage", stored: []*helmrelease.Release{changed, v2Failed},
			history: fxHistory(v1, v2Failed), spec: retries, want: stateFailed, target: targetCorrupt},
		{name: "failed upgrade, rollback target gone from storage", stored: []*helmrelease.Release{v2Failed},
			history: fxHistory(v1, v2Failed), spec: retries, want: stateFailed, target: targetCorrupt},
		{name: "failed upgrade, uninstall strategy needs no target", stored: []*helmrelease.Release{v2Failed},
			history: fxHistory(v2Failed), spec: func(s *Spec) { retries(s); s.Upgrade.Remediation.Strategy = StrategyUninstall },
			want: stateFailed, target: targetOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &Spec{Name: fxName, Namespace: fxNS, ChartDigest: "sha256:chart"}
			if c.spec != nil {
				c.spec(spec)
			}
			st := &Status{History: c.history}
			if c.status != nil {
				c.status(st)
			}
			config := c.config
			if config == nil {
				config = values
			}
			r := fxRequest(t, spec, st, config, c.stored...)
			s, err := r.observeState(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if s.kind != c.want || s.target != c.target {
				t.Errorf("state %d target %d (%s), want state %d target %d", s.kind, s.target, s.reason, c.want, c.target)
			}
		})
	}
}

// A force request (force_token) changes the first decision of an apply
// only, as helm-controller handles forceAt once.
func TestDecide_force(t *testing.T) {
	values := map[string]any{"replicaCount": 1}
	v1 := fxRelease(1, helmcommon.StatusDeployed, values)
	v1Superseded := fxRelease(1, helmcommon.StatusSuperseded, values)
	v2Failed := fxRelease(2, helmcommon.StatusFailed, values)
	exhausted := func(s *Status) { s.UpgradeFailures, s.LastAttemptedReleaseAction = 2, actionUpgrade }
	cases := []struct {
		name          string
		stored        []*helmrelease.Release
		history       []Snapshot
		status        func(*Status)
		config        map[string]any
		first, second Action
		secondErr     bool
	}{
		{name: "in sync is upgraded once", stored: []*helmrelease.Release{v1}, history: fxHistory(v1),
			first: ActionUpgrade, second: ActionNone},
		{name: "out of retries, out of sync", stored: []*helmrelease.Release{v1}, history: fxHistory(v1), status: exhausted,
			config: map[string]any{"replicaCount": 2}, first: ActionUpgrade, secondErr: true},
		{name: "failed and out of retries is upgraded, not remediated", stored: []*helmrelease.Release{v1Superseded, v2Failed},
			history: fxHistory(v1Superseded, v2Failed), status: exhausted, first: ActionUpgradeFailed, second: ActionRollback},
		{name: "a locked release is unlocked first", stored: []*helmrelease.Release{fxRelease(1, helmcommon.StatusPendingInstall, values)},
			first: ActionUnlock, second: ActionUnlock},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &Spec{Name: fxName, Namespace: fxNS, ChartDigest: "sha256:chart", Force: true}
			spec.Upgrade.Remediation.Retries = 1
			st := &Status{History: c.history}
			if c.status != nil {
				c.status(st)
			}
			config := c.config
			if config == nil {
				config = values
			}
			r := fxRequest(t, spec, st, config, c.stored...)
			s, err := r.observeState(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if act, reason, err := r.decide(s); err != nil || act != c.first {
				t.Fatalf("first decision %s (%s, %v), want %s", act, reason, err, c.first)
			}
			act, reason, err := r.decide(s)
			if c.secondErr != (err != nil) || err == nil && act != c.second {
				t.Fatalf("second decision %s (%s, %v), want %s (error %v)", act, reason, err, c.second, c.secondErr)
			}
		})
	}
}
