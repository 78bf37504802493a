package release

import (
	"errors"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

func TestDecide_actionForEachState(t *testing.T) {
	failed := releaseState{kind: stateFailed, reason: "release is failed"}
	for _, tc := range []struct {
		name      string
		s         releaseState
		st        Status
		spec      Spec
		want      Action
		exhausted bool
		wantErr   bool
	}{
		{name: "absent installs", s: releaseState{kind: stateAbsent}, want: ActionInstall},
		{name: "absent out of install retries", s: releaseState{kind: stateAbsent},
			st: Status{InstallFailures: 1}, exhausted: true},
		{name: "absent with retries left", s: releaseState{kind: stateAbsent},
			st: Status{InstallFailures: 2}, spec: Spec{Install: Install{Remediation: InstallRemediation{Retries: 2}}}, want: ActionInstall},
		{name: "locked unlocks", s: releaseState{kind: stateLocked}, want: ActionUnlock},
		{name: "unmanaged upgrades", s: releaseState{kind: stateUnmanaged}, want: ActionUpgrade},
		{name: "out of sync upgrades", s: releaseState{kind: stateOutOfSync}, want: ActionUpgrade},
		{name: "out of sync out of upgrade retries", s: releaseState{kind: stateOutOfSync},
			st: Status{UpgradeFailures: 1}, exhausted: true},
		{name: "infinite upgrade retries", s: releaseState{kind: stateOutOfSync},
			st: Status{UpgradeFailures: 100}, spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: -1}}}, want: ActionUpgrade},
		{name: "untested tests", s: releaseState{kind: stateUntested}, want: ActionTest},
		{name: "drift corrected", s: releaseState{kind: stateDrifted}, want: ActionCorrect},
		{name: "drift warned", s: releaseState{kind: stateDrifted}, spec: Spec{DriftDetection: DriftDetection{Mode: DriftWarn}}, want: ActionNone},
		{name: "in sync", s: releaseState{kind: stateInSync}, want: ActionNone},

		{name: "failed without remediation upgrades", s: failed, want: ActionUpgradeFailed},
		{name: "failed after a change upgrades", s: failed,
			st: Status{LastAttemptedReleaseAction: actionUpgrade}, want: ActionUpgradeFailed},
		{name: "failed install uninstalls", s: failed,
			st:   Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1},
			spec: Spec{Install: Install{Remediation: InstallRemediation{Retries: 2}}}, want: ActionUninstall},
		{name: "failed install out of retries", s: failed,
			st: Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1}, exhausted: true},
		{name: "failed install out of retries remediates last failure", s: failed,
			st:   Status{LastAttemptedReleaseAction: actionInstall, InstallFailures: 1},
			spec: Spec{Install: Install{Remediation: InstallRemediation{RemediateLastFailure: ptr(true)}}}, want: ActionUninstall},
		{name: "failed upgrade rolls back", s: failed,
			st:   Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionRollback},
		{name: "failed upgrade remediates the last failure by default with retries", s: failed,
			st:   Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 2},
			spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionRollback},
		{name: "failed upgrade without retries stops", s: failed,
			st: Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1}, exhausted: true},
		{name: "failed upgrade uninstalls", s: failed,
			st:   Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, want: ActionUninstall},
		{name: "failed upgrade without a rollback target", s: releaseState{kind: stateFailed, target: targetMissing},
			st:      Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec:    Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}},
			wantErr: true},
		{name: "failed upgrade with a changed rollback target upgrades", s: releaseState{kind: stateFailed, target: targetCorrupt},
			st:   Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec: Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}, want: ActionUpgradeFailed},
		{name: "unknown strategy", s: failed,
			st:      Status{LastAttemptedReleaseAction: actionUpgrade, UpgradeFailures: 1},
			spec:    Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: "pray"}}},
			wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := decide(tc.s, &tc.st, tc.spec.withDefaults())
			var ex *exhaustedError
			switch {
			case tc.exhausted:
				if !errors.As(err, &ex) {
					t.Fatalf("want retries exhausted, got %v, %v", got, err)
				}
			case tc.wantErr:
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			case got != tc.want:
				t.Fatalf("decide = %q (%s), want %q", got, reason, tc.want)
			}
		})
	}
}

func TestInferLastAction_fromDescription(t *testing.T) {
	for desc, want := range map[string]string{
		"Install complete":                   actionInstall,
		`Release "x" failed: boom`:           actionInstall,
		"Upgrade complete":                   actionUpgrade,
		`Upgrade "x" failed: boom`:           actionUpgrade,
		"Rollback to 1":                      actionUpgrade,
		"Release unlocked from stale 'x' st": "",
	} {
		rls := &helmrelease.Release{Info: &helmrelease.Info{Description: desc}}
		if got := inferLastAction(rls); got != want {
			t.Errorf("inferLastAction(%q) = %q, want %q", desc, got, want)
		}
	}
}

func snap(v int, status string, failedTest bool) Snapshot {
	s := Snapshot{Name: "r", Namespace: "ns", Version: v, Status: status}
	if failedTest {
		s.TestHooks = []TestHook{{Name: "t", Phase: "Failed"}}
	}
	return s
}

func versions(h []Snapshot) []int {
	var out []int
	for _, s := range h {
		out = append(out, s.Version)
	}
	return out
}

func TestHistory_rollbackTargetTruncationAndUpsert(t *testing.T) {
	h := []Snapshot{snap(5, "failed", false), snap(4, "superseded", true), snap(3, "superseded", false), snap(2, "superseded", false), snap(1, "superseded", false)}
	if p := previousSnapshot(h, false); p == nil || p.Version != 3 {
		t.Errorf("previous (tests count) = %v, want v3", p)
	}
	if p := previousSnapshot(h, true); p == nil || p.Version != 4 {
		t.Errorf("previous (tests ignored) = %v, want v4", p)
	}
	if got := versions(truncateHistory(append([]Snapshot(nil), h...), false, 5)); len(got) != 3 || got[2] != 3 {
		t.Errorf("truncate = %v, want [5 4 3]", got)
	}
	failures := []Snapshot{snap(7, "failed", false), snap(6, "failed", false), snap(5, "failed", false), snap(4, "failed", false)}
	if got := versions(truncateHistory(failures, false, 2)); len(got) != 2 {
		t.Errorf("truncate without a target = %v, want the newest 2", got)
	}
	if p := previousSnapshot(h[:1], false); p != nil {
		t.Errorf("previous of one entry = %v", p)
	}

	// upsert keeps our knowledge of a revision and orders by version.
	h2 := []Snapshot{snap(1, "deployed", true)}
	h2[0].ChartDigest = "sha256:c"
	h2 = upsertSnapshot(h2, snap(1, "superseded", false))
	if h2[0].Status != "superseded" || len(h2[0].TestHooks) != 1 || h2[0].ChartDigest != "sha256:c" {
		t.Errorf("upsert lost what we knew: %+v", h2[0])
	}
	h2 = upsertSnapshot(h2, snap(2, "deployed", false))
	if got := versions(h2); got[0] != 2 || got[1] != 1 {
		t.Errorf("upsert order = %v", got)
	}
}

func testRelease() *helmrelease.Release {
	deployed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &helmrelease.Release{
		Name: "r", Namespace: "ns", Version: 2,
		Info:   &helmrelease.Info{Status: helmcommon.StatusDeployed, LastDeployed: deployed},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "podinfo", Version: "1.0.0"}},
		Config: map[string]any{"replicaCount": 2},
		Hooks: []*helmrelease.Hook{
			{Name: "pre", Events: []helmrelease.HookEvent{helmrelease.HookPreInstall}},
			{Name: "a", Events: []helmrelease.HookEvent{helmrelease.HookTest}},
			{Name: "b", Events: []helmrelease.HookEvent{helmrelease.HookTest}},
		},
	}
}

func TestTestResults_dueUntilRunForThisDeployment(t *testing.T) {
	rls := testRelease()
	if _, tested := testResults(rls, nil); tested {
		t.Error("a release whose test hooks never ran counts as tested")
	}
	// Runs from before this deployment (copied by a rollback) do not count.
	old := rls.Info.LastDeployed.Add(-time.Hour)
	rls.Hooks[1].LastRun = helmrelease.HookExecution{StartedAt: old, Phase: helmrelease.HookPhaseSucceeded}
	if _, tested := testResults(rls, nil); tested {
		t.Error("a run before the deployment counts")
	}
	now := rls.Info.LastDeployed.Add(time.Minute)
	rls.Hooks[1].LastRun = helmrelease.HookExecution{StartedAt: now, CompletedAt: now, Phase: helmrelease.HookPhaseFailed}
	hooks, tested := testResults(rls, nil)
	if !tested || len(hooks) != 1 || hooks[0].Name != "a" || hooks[0].Phase != "Failed" {
		t.Errorf("testResults = %+v, %v", hooks, tested)
	}
	// Only b selected, and b never ran.
	if _, tested := testResults(rls, []TestFilter{{Name: "b"}}); tested {
		t.Error("an include filter is not applied")
	}
	// Everything excluded: nothing to run, so nothing is due.
	if _, tested := testResults(rls, []TestFilter{{Name: "a", Exclude: true}, {Name: "b", Exclude: true}}); !tested {
		t.Error("tests are due with every hook excluded")
	}
}

func TestReleaseDigest_stableAcrossTestRunsAndValuesRoundTrip(t *testing.T) {
	rls := testRelease()
	d := releaseDigest(rls)
	// Test runs do not change it.
	rls.Hooks[1].LastRun.Phase = helmrelease.HookPhaseSucceeded
	if releaseDigest(rls) != d {
		t.Error("a test run changed the release digest")
	}
	// Values read back from storage (float64) digest as written (int).
	rls.Config = map[string]any{"replicaCount": float64(2)}
	if releaseDigest(rls) != d {
		t.Error("JSON round trip of the values changed the release digest")
	}
	rls.Info.Status = helmcommon.StatusSuperseded
	if releaseDigest(rls) == d {
		t.Error("a status change did not change the release digest")
	}
}

func TestOutOfSync_detectsEachChangeButNotUnknownDigests(t *testing.T) {
	rls := testRelease()
	cur := snapshotOf(rls, "sha256:a")
	in := syncInputs{chartName: "podinfo", chartVersion: "1.0.0", chartDigest: "sha256:a",
		configDigest: DigestValues(map[string]any{"replicaCount": 2}), prDigest: "sha256:p"}
	st := &Status{PostRenderersDigest: "sha256:p"}
	if r := outOfSync(rls, &cur, st, in); r != "" {
		t.Errorf("in sync reported out of desired: %s", r)
	}
	for name, mutate := range map[string]func(*syncInputs, *Snapshot, *Status){
		"version":        func(i *syncInputs, _ *Snapshot, _ *Status) { i.chartVersion = "1.1.0" },
		"digest":         func(i *syncInputs, _ *Snapshot, _ *Status) { i.chartDigest = "sha256:b" },
		"values":         func(i *syncInputs, _ *Snapshot, _ *Status) { i.configDigest = DigestValues(nil) },
		"post-renderers": func(i *syncInputs, _ *Snapshot, _ *Status) { i.prDigest = "sha256:q" },
		"digest known from the last attempt": func(i *syncInputs, s *Snapshot, _ *Status) {
			s.ChartDigest, i.knownChartDigest, i.chartDigest = "", "sha256:a", "sha256:b"
		},
	} {
		i, c, s := in, cur, *st
		mutate(&i, &c, &s)
		if outOfSync(rls, &c, &s, i) == "" {
			t.Errorf("%s change not detected", name)
		}
	}
	// Unknown digests (an import) are no change.
	c, s := cur, *st
	c.ChartDigest, s.PostRenderersDigest = "", ""
	i := in
	i.chartDigest, i.prDigest = "sha256:b", "sha256:q"
	if r := outOfSync(rls, &c, &s, i); r != "" {
		t.Errorf("unknown digests reported as a change: %s", r)
	}
}

func TestSummarize_readyFromOtherConditions(t *testing.T) {
	st := &Status{}
	spec := &Spec{Test: Test{Enable: true}}
	setCondition(st, CondReleased, "True", ReasonInstallSucceeded, "installed")
	setCondition(st, CondTestSuccess, "False", ReasonTestFailed, "test failed")
	summarize(st, spec)
	if c := getCondition(st, CondReady); c == nil || c.Status != "False" || c.Reason != ReasonTestFailed {
		t.Errorf("Ready = %+v, want False TestFailed", c)
	}
	spec.Test.IgnoreFailures = true
	summarize(st, spec)
	if c := getCondition(st, CondReady); c.Status != "True" || c.Reason != ReasonInstallSucceeded {
		t.Errorf("Ready with ignored test failures = %+v", c)
	}
	setCondition(st, CondRemediated, "True", ReasonRollbackSucceeded, "rolled back")
	summarize(st, spec)
	if c := getCondition(st, CondReady); c.Status != "False" || c.Reason != ReasonRollbackSucceeded {
		t.Errorf("Ready after a remediation = %+v", c)
	}
	if st.Conditions[0].Type != CondReady || st.Conditions[len(st.Conditions)-1].Type != CondRemediated {
		t.Errorf("conditions out of order: %+v", st.Conditions)
	}
}

func TestIsRenderError_recognizesTemplateErrors(t *testing.T) {
	for msg, want := range map[string]string{
		`template: podinfo/templates/cm.yaml:3:10: executing "podinfo/templates/cm.yaml" at <.Values.x.y>: nil pointer`:                                                                   "values",
		"template failed: podinfo/templates/deployment.yaml:23:28\n  executing \"podinfo/templates/deployment.yaml\" at <.Values.image.repository>:\n    can't evaluate field repository": "values",
		`parse error at (podinfo/templates/cm.yaml:3): unexpected "}" in operand`:                                                                                                         "chart",
		`template: podinfo/templates/cm.yaml:3: function "nope" not defined`:                                                                                                              "chart",
		`execution error at (podinfo/templates/cm.yaml:1:4): image is required`:                                                                                                           "values",
		`YAML parse error on podinfo/templates/cm.yaml: error converting YAML to JSON`:                                                                                                    "chart",
		"values don't meet the specifications of the schema(s) in the following chart(s):\npodinfo:\n- replicaCount: Invalid type":                                                        "values",
		`secrets is forbidden: User "system:serviceaccount:default:nobody" cannot list resource`:                                                                                          "",
	} {
		if got := renderErrorPath(msg); got != want {
			t.Errorf("renderErrorPath(%q) = %q, want %q", msg, got, want)
		}
		if got := isRenderError(msg); got != (want != "") {
			t.Errorf("isRenderError(%q) = %v", msg, got)
		}
	}
}

// keepsFirstDeployed: an upgrade keeps the first deployment date, unless its
// remediation may uninstall and a retry install again; no other first action
// promises it.
func TestKeepsFirstDeployed(t *testing.T) {
	spec := func(strategy string, retries int) *Spec {
		s := (&Spec{}).withDefaults()
		s.Upgrade.Remediation.Strategy, s.Upgrade.Remediation.Retries = strategy, retries
		return s
	}
	for _, tc := range []struct {
		act  Action
		spec *Spec
		want bool
	}{
		{ActionUpgrade, spec(StrategyRollback, 3), true},
		{ActionUpgradeFailed, spec(StrategyRollback, -1), true},
		{ActionUpgrade, spec(StrategyUninstall, 0), true},
		{ActionUpgrade, spec(StrategyUninstall, 1), false},
		{ActionUpgrade, spec(StrategyUninstall, -1), false},
		{ActionInstall, spec(StrategyRollback, 0), false},
		{ActionRollback, spec(StrategyRollback, 0), false},
		{ActionTest, spec(StrategyRollback, 0), false},
	} {
		if got := keepsFirstDeployed(tc.act, tc.spec); got != tc.want {
			t.Errorf("keepsFirstDeployed(%s, strategy %s, retries %d) = %v, want %v",
				tc.act, tc.spec.Upgrade.Remediation.Strategy, tc.spec.Upgrade.Remediation.Retries, got, tc.want)
		}
	}
}
