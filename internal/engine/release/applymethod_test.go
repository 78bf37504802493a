package release

import (
	"fmt"
	"testing"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
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
	ssa := &helmrelease.Release{ApplyMethod: ApplyMethodSSA}
	csa := &helmrelease.Release{}
	cases := []struct {
		name string
		act  Action
		spec Spec
		from *helmrelease.Release
		want string
	}{
		{"install", ActionInstall, Spec{}, nil, ApplyMethodSSA},
		{"install helm3_defaults", ActionInstall, Spec{Helm3Defaults: true}, nil, ApplyMethodCSA},
		{"upgrade auto from csa", ActionUpgrade, Spec{}, csa, ApplyMethodCSA},
		{"upgrade auto from ssa", ActionUpgradeFailed, Spec{}, ssa, ApplyMethodSSA},
		{"upgrade enabled from csa", ActionUpgrade, Spec{Upgrade: Upgrade{ServerSideApply: SSAEnabled}}, csa, ApplyMethodSSA},
		{"auto with rollback retries: a retry may follow a rollback to either", ActionUpgrade,
			Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 2}}}, ssa, ""},
		{"enabled with rollback retries", ActionUpgrade,
			Spec{Upgrade: Upgrade{ServerSideApply: SSAEnabled, Remediation: UpgradeRemediation{Retries: 2}}}, csa, ApplyMethodSSA},
		{"uninstall retries, install writes the same", ActionUpgrade,
			Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, ssa, ApplyMethodSSA},
		{"uninstall retries, install writes another", ActionUpgrade,
			Spec{Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 1, Strategy: StrategyUninstall}}}, csa, ""},
		{"test writes no release", ActionTest, Spec{}, ssa, ""},
		{"drift correction writes no release", ActionCorrect, Spec{}, ssa, ""},
		{"rollback", ActionRollback, Spec{}, ssa, ""},
	}
	for _, c := range cases {
		if got := plannedApplyMethod(c.act, c.spec.withDefaults(), c.from); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
