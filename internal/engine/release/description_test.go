package release

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// A release description of the user's (Spec.Description) replaces Helm's
// "Install complete" and "Upgrade complete", which the last action was read
// from. Installed and upgraded by Helm's own actions on Helm's memory driver,
// and read back as the Secrets driver stores them (JSON), the release still
// says which action made it: to an import and a state that does not record it
// (the Released condition's reason), to remediation (a failed test of an
// upgrade is remediated as the upgrade's), and to the description an import
// reads back.
func TestDescription_keepsTheLastActionKnown(t *testing.T) {
	const desc = "Upgrade \"podinfo\" failed: a description that reads like Helm's"
	req, store := actionFixture(t, runnerCase{spec: func(s *Spec) { s.Description = desc }, tests: true})
	if err := (installRunner{}).run(context.Background(), req, releaseState{kind: stateAbsent}); err != nil {
		t.Fatal(err)
	}
	v1 := storedRelease(t, store, 1)
	checkDescribed(t, "install", store, v1, desc, actionInstall, ReasonInstallSucceeded)

	req.values = map[string]any{"replicaCount": 3}
	if err := (upgradeRunner{}).run(context.Background(), req, releaseState{kind: stateOutOfSync, rls: v1}); err != nil {
		t.Fatal(err)
	}
	v2 := storedRelease(t, store, 2)
	checkDescribed(t, "upgrade", store, v2, desc, actionUpgrade, ReasonUpgradeSucceeded)
	if got := inferLastAction(storedRelease(t, store, 1)); got != actionInstall {
		t.Errorf("superseded install: last action %q, want %q", got, actionInstall)
	}

	// A test of the upgrade that failed, in a status that does not record
	// the last action (an import): the upgrade's remediation handles it.
	withTestHook(helmrelease.HookPhaseFailed)(v2)
	spec := (&Spec{Name: fxName, Namespace: fxNS, Description: desc, Test: Test{Enable: true},
		Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1}}}).withDefaults()
	rem := activeRemediation(spec, &Status{}, v2)
	if rem == nil || rem.action != actionUpgrade || rem.strategy != StrategyRollback {
		t.Fatalf("remediation of a failed test after an upgrade with a description: %+v, want the upgrade's", rem)
	}

	// Helm's own texts are not a description of the user's.
	for _, rls := range []*helmrelease.Release{
		fxRelease(1, helmcommon.StatusDeployed, nil, describe("Install complete")),
		fxRelease(2, helmcommon.StatusDeployed, nil, describe("Upgrade complete")),
		fxRelease(3, helmcommon.StatusDeployed, nil, describe("Rollback to 1")),
		fxRelease(3, helmcommon.StatusSuperseded, nil, describe("superseded by new release")),
		fxRelease(4, helmcommon.StatusFailed, nil, describe(`Upgrade "podinfo" failed: timed out`)),
		fxRelease(4, helmcommon.StatusFailed, nil, describe("Release unlocked from stale 'pending-upgrade' state")),
		fxRelease(4, helmcommon.StatusUninstalled, nil, describe("Uninstallation complete")),
	} {
		if got := GivenDescription(rls); got != "" {
			t.Errorf("%s release described %q: given description %q, want none", rls.Info.Status, rls.Info.Description, got)
		}
	}
	if got := inferLastAction(fxRelease(3, helmcommon.StatusDeployed, nil, describe("Rollback to 1"))); got != actionUpgrade {
		t.Errorf("a rollback's release: last action %q, want %q", got, actionUpgrade)
	}

	// Another client's description is quoted where the plan warns of it,
	// Helm's own text is not.
	cur := &Snapshot{Version: 1}
	for d, want := range map[string]string{
		"deploy 42, Upgrade complete": `revision 3 (described "deploy 42, Upgrade complete" by another client)`,
		"Upgrade complete":            "revision 3 (Upgrade complete, by another client)",
	} {
		msg := changedOutside(fxRelease(3, helmcommon.StatusDeployed, nil, describe(d)), cur, nil, fxNS, "podinfo@1.0.0")
		if !strings.Contains(msg, want) {
			t.Errorf("changed outside, described %q: %q, want it to say %q", d, msg, want)
		}
	}
}

func describe(d string) func(*helmrelease.Release) {
	return func(rls *helmrelease.Release) { rls.Info.Description = d }
}

// storedRelease is revision v as Helm's Secrets driver gives it back: through
// JSON, as it encodes releases.
func storedRelease(t *testing.T, store releaseStore, v int) *helmrelease.Release {
	t.Helper()
	rls, err := store.Get(fxName, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rls)
	if err != nil {
		t.Fatal(err)
	}
	var out helmrelease.Release
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// checkDescribed checks that rls, the latest release, carries desc and that
// the last action, the Released condition of an import and the description it
// reads back say what made it.
func checkDescribed(t *testing.T, what string, store releaseStore, rls *helmrelease.Release, desc, action, reason string) {
	t.Helper()
	if rls.Info.Status != helmcommon.StatusDeployed || rls.Info.Description != desc {
		t.Fatalf("%s: release %s, described %q; want deployed, described %q", what, rls.Info.Status, rls.Info.Description, desc)
	}
	if got := inferLastAction(rls); got != action {
		t.Errorf("%s: last action %q, want %q", what, got, action)
	}
	if got := GivenDescription(rls); got != desc {
		t.Errorf("%s: given description %q, want %q", what, got, desc)
	}
	hist, err := store.History(fxName)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hist {
		if h.Version == rls.Version {
			hist[i] = rls
		}
	}
	st := statusFromHistory(hist, nil)
	if st.LastAttemptedReleaseAction != action {
		t.Errorf("%s: imported last action %q, want %q", what, st.LastAttemptedReleaseAction, action)
	}
	if c := condition(st, CondReleased); c.Status != "True" || c.Reason != reason {
		t.Errorf("%s: imported Released=%s/%s, want True/%s", what, c.Status, c.Reason, reason)
	}
}
