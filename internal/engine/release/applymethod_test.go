package release

import (
	"errors"
	"fmt"
	"testing"
	"time"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
	"github.com/stevedore-dev/terraform-provider-stevedore/internal/testenv"
)

// The apply method of each action, for each mode and each method of the
// release it applies from, as helm-controller's internal/action resolves
// it: install x enabled/disabled (and the helm3_defaults default),
// upgrade and rollback x enabled/disabled/auto x last method.
func TestWriteMode_table(t *testing.T) {
	rec := func(m string) *helmrelease.Release { return &helmrelease.Release{ApplyMethod: m} }
	helm3 := rec("") // written by Helm 3: no apply_method
	cases := []struct {
		name string
		got  writeMode
		want writeMode
	}{
		{"install default", installMode((&Spec{}).withDefaults()), writeMode{ServerSide: true}},
		{"install helm3_defaults", installMode((&Spec{Helm3Defaults: true}).withDefaults()), writeMode{}},
		{"install enabled under helm3_defaults", installMode((&Spec{Helm3Defaults: true, Install: Install{ServerSideApply: ptr(true)}}).withDefaults()), writeMode{ServerSide: true}},
		{"install disabled", installMode((&Spec{Install: Install{ServerSideApply: ptr(false)}}).withDefaults()), writeMode{}},
	}
	for _, force := range []bool{false, true} {
		for _, mode := range []string{"", SSAEnabled, SSADisabled, SSAAuto} {
			for _, from := range []*helmrelease.Release{nil, helm3, rec(ApplyMethodCSA), rec(ApplyMethodSSA)} {
				fromName := "none"
				if from != nil {
					fromName = fmt.Sprintf("%q", from.ApplyMethod)
				}
				ssa := mode == SSAEnabled || (mode != SSADisabled && from != nil && from.ApplyMethod == ApplyMethodSSA)
				want := writeMode{ServerSide: ssa, ForceConflicts: ssa, ForceReplace: force && !ssa}
				up := (&Spec{Upgrade: Upgrade{ServerSideApply: mode, Force: force}}).withDefaults()
				cases = append(cases, struct {
					name string
					got  writeMode
					want writeMode
				}{fmt.Sprintf("upgrade %q force=%v from %s", mode, force, fromName), upgradeMode(up, from), want})
				rb := (&Spec{Helm3Defaults: true, Rollback: Rollback{ServerSideApply: mode, Force: force}}).withDefaults()
				cases = append(cases, struct {
					name string
					got  writeMode
					want writeMode
				}{fmt.Sprintf("rollback %q force=%v to %s (helm3_defaults)", mode, force, fromName), rollbackMode(rb, from), want})
			}
		}
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, c.got, c.want)
		}
	}
	if n := len(cases); n != 4+2*2*4*4 {
		t.Fatalf("%d cases", n)
	}
}

// What the plan can promise of the apply method: the release that a
// successful apply leaves, unless remediation may end it on another.
func TestPlannedApplyMethod(t *testing.T) {
	ssa := &helmrelease.Release{Version: 3, ApplyMethod: ApplyMethodSSA}
	csa := &helmrelease.Release{Version: 3}
	// The history an upgrade starts from: revision 3 deployed, newest first.
	good := []Snapshot{{Version: 3, Status: "deployed"}, {Version: 2, Status: "superseded"}}
	// Revision 3's tests failed: a remediation would go back to revision 2.
	testFailed := []Snapshot{{Version: 3, Status: "deployed", TestHooks: []TestHook{{Name: "t", Phase: "Failed"}}}, {Version: 2, Status: "superseded"}}
	retries := func(u Upgrade) Upgrade { u.Remediation.Retries = 2; return u }
	cases := []struct {
		name string
		act  Action
		spec Spec
		from *helmrelease.Release
		hist []Snapshot
		want string
	}{
		{"install", ActionInstall, Spec{}, nil, nil, ApplyMethodSSA},
		{"install helm3_defaults", ActionInstall, Spec{Helm3Defaults: true}, nil, nil, ApplyMethodCSA},
		{"upgrade auto from csa", ActionUpgrade, Spec{}, csa, good, ApplyMethodCSA},
		{"upgrade auto from ssa", ActionUpgradeFailed, Spec{}, ssa, good, ApplyMethodSSA},
		{"upgrade enabled from csa", ActionUpgrade, Spec{Upgrade: Upgrade{ServerSideApply: SSAEnabled}}, csa, good, ApplyMethodSSA},
		{"auto with rollback retries: the retry follows a rollback to the release upgraded from", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{})}, ssa, good, ApplyMethodSSA},
		{"auto with rollback retries: the rollback target is an older revision", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{})}, ssa, testFailed, ""},
		{"auto with rollback retries, ignoring tests: the release upgraded from", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{Remediation: UpgradeRemediation{IgnoreTestFailures: ptr(true)}})}, ssa, testFailed, ApplyMethodSSA},
		{"auto with rollback retries, no history", ActionUpgrade, Spec{Upgrade: retries(Upgrade{})}, ssa, nil, ""},
		{"auto with a fixed rollback of the other method", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{}), Rollback: Rollback{ServerSideApply: SSADisabled}}, ssa, good, ""},
		{"auto with a fixed rollback of the same method", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{}), Rollback: Rollback{ServerSideApply: SSAEnabled}}, ssa, testFailed, ApplyMethodSSA},
		{"enabled with rollback retries", ActionUpgrade,
			Spec{Upgrade: retries(Upgrade{ServerSideApply: SSAEnabled})}, csa, good, ApplyMethodSSA},
		{"uninstall retries, install writes the same", ActionUpgrade,
			Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, ssa, good, ApplyMethodSSA},
		{"uninstall retries, install writes another", ActionUpgrade,
			Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, csa, good, ""},
		{"test writes no release", ActionTest, Spec{}, ssa, good, ""},
		{"drift correction writes no release", ActionCorrect, Spec{}, ssa, good, ""},
		{"rollback", ActionRollback, Spec{}, ssa, good, ""},
	}
	for _, c := range cases {
		if got := plannedApplyMethod(c.act, c.spec.withDefaults(), c.from, c.hist); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// An apply whose first upgrade would write with another method than the
// plan showed (another client wrote a revision of the other method since
// the plan, and `auto` follows it) is refused before any action.
func TestReconcile_applyMethodChangedSincePlanRefused(t *testing.T) {
	t.Parallel()
	ctx := testenv.Context(t)
	e, c := newEngine(t)
	ns := makeNamespace(t, c)
	path, digest := podinfo(t, "1.0.0")
	spec := &Spec{Name: "podinfo", Namespace: ns, Owner: kube.NewOwnerID(), Timeout: time.Minute, ChartPath: path, ChartDigest: digest,
		Install: Install{ServerSideApply: ptr(false)}, Values: map[string]any{"replicaCount": 1}}
	st, err := e.Reconcile(ctx, spec, nil)
	if err != nil || st.ApplyMethod != ApplyMethodCSA {
		t.Fatalf("install: %v, apply method %q", err, st.ApplyMethod)
	}
	spec.Values = map[string]any{"replicaCount": 2}
	p, err := e.Plan(ctx, spec, st)
	if err != nil || p.Action != ActionUpgrade || p.ApplyMethod != ApplyMethodCSA {
		t.Fatalf("plan: %v, %s with %q", err, p.Action, p.ApplyMethod)
	}
	// Meanwhile another writer upgrades with server-side apply.
	other := *spec
	other.Values = map[string]any{"replicaCount": 3}
	other.Upgrade.ServerSideApply = SSAEnabled
	if st2, err := e.Reconcile(ctx, &other, st); err != nil || st2.Version != 2 || st2.ApplyMethod != ApplyMethodSSA {
		t.Fatalf("the other upgrade: %v, %+v", err, st2)
	}
	spec.PlannedApplyMethod = p.ApplyMethod
	_, err = e.Reconcile(ctx, spec, st)
	var stale *StaleApplyMethodError
	if !errors.As(err, &stale) || stale.Planned != ApplyMethodCSA || stale.Now != ApplyMethodSSA || stale.Version != 2 {
		t.Fatalf("apply of the stale plan: %v", err)
	}
	if got, _ := testenv.ReleaseRevisions(testenv.Need(t).Cluster.Kubeconfig, ns, "podinfo"); len(got) != 2 {
		t.Errorf("revisions %v, want 2: the refused apply wrote one", got)
	}
	spec.PlannedApplyMethod = ApplyMethodSSA
	if st3, err := e.Reconcile(ctx, spec, st); err != nil || st3.ApplyMethod != ApplyMethodSSA || st3.Version != 3 {
		t.Fatalf("apply planned again: %v, %+v", err, st3)
	}
}
