package release

import (
	"reflect"
	"testing"
	"time"
)

// withDefaults fills in what the spec leaves unset, keeps what it sets (0
// max history keeps all), derives the defaults that depend on other fields,
// and leaves the spec it was given alone.
func TestSpecWithDefaults(t *testing.T) {
	minute, sec := time.Minute, time.Second
	for _, tc := range []struct {
		name string
		in   Spec
		want Spec
	}{{
		name: "unset",
		in:   Spec{ValuesFrom: []ValuesReference{{Kind: "ConfigMap", Name: "v"}}},
		want: Spec{
			MaxHistory: ptr(DefaultMaxHistory), Timeout: DefaultTimeout,
			WaitStrategy: WaitPoller, PostRenderStrategy: PostRenderCombined,
			ValuesFrom: []ValuesReference{{Kind: "ConfigMap", Name: "v", ValuesKey: DefaultValuesKey}},
			Install: Install{Timeout: DefaultTimeout, CRDs: CRDsCreate, ServerSideApply: ptr(true),
				Remediation: InstallRemediation{IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(false)}},
			Upgrade: Upgrade{Timeout: DefaultTimeout, CRDs: CRDsSkip, ServerSideApply: SSAAuto, ChartNameChangeStrategy: ChartNameReinstall,
				Remediation: UpgradeRemediation{IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(false), Strategy: StrategyRollback}},
			Test:           Test{Timeout: DefaultTimeout},
			Rollback:       Rollback{Timeout: DefaultTimeout, ServerSideApply: SSAAuto},
			Uninstall:      Uninstall{Timeout: DefaultTimeout, DeletionPropagation: DefaultDeletionPropagation},
			DriftDetection: DriftDetection{Mode: DriftEnabled},
		},
	}, {
		name: "derived from other fields",
		in: Spec{Timeout: minute, Test: Test{IgnoreFailures: true}, Helm3Defaults: true,
			Upgrade: Upgrade{Remediation: UpgradeRemediation{Retries: 2}}},
		want: Spec{
			MaxHistory: ptr(DefaultMaxHistory), Timeout: minute, Helm3Defaults: true,
			WaitStrategy: WaitLegacy, PostRenderStrategy: PostRenderNoHooks,
			Install: Install{Timeout: minute, CRDs: CRDsCreate, ServerSideApply: ptr(false),
				Remediation: InstallRemediation{IgnoreTestFailures: ptr(true), RemediateLastFailure: ptr(false)}},
			Upgrade: Upgrade{Timeout: minute, CRDs: CRDsSkip, ServerSideApply: SSAAuto, ChartNameChangeStrategy: ChartNameReinstall,
				Remediation: UpgradeRemediation{Retries: 2, IgnoreTestFailures: ptr(true), RemediateLastFailure: ptr(true), Strategy: StrategyRollback}},
			Test:           Test{Timeout: minute, IgnoreFailures: true},
			Rollback:       Rollback{Timeout: minute, ServerSideApply: SSAAuto},
			Uninstall:      Uninstall{Timeout: minute, DeletionPropagation: DefaultDeletionPropagation},
			DriftDetection: DriftDetection{Mode: DriftEnabled},
		},
	}, {
		name: "set",
		in: Spec{MaxHistory: ptr(0), Timeout: minute, Test: Test{IgnoreFailures: true, Timeout: sec},
			Helm3Defaults: true, WaitStrategy: WaitPoller, PostRenderStrategy: PostRenderSeparate,
			ValuesFrom: []ValuesReference{{Kind: "Secret", Name: "v", ValuesKey: "prod.yaml"}},
			Install: Install{Timeout: sec, CRDs: CRDsSkip, ServerSideApply: ptr(true),
				Remediation: InstallRemediation{IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(true)}},
			Upgrade: Upgrade{Timeout: sec, CRDs: CRDsCreateReplace, ServerSideApply: SSADisabled, ChartNameChangeStrategy: ChartNameInPlaceUpdate,
				Remediation: UpgradeRemediation{Retries: 2, IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(false), Strategy: StrategyUninstall}},
			Rollback:       Rollback{Timeout: sec, ServerSideApply: SSAEnabled},
			Uninstall:      Uninstall{Timeout: sec, DeletionPropagation: "orphan"},
			DriftDetection: DriftDetection{Mode: DriftWarn},
		},
		want: Spec{MaxHistory: ptr(0), Timeout: minute, Test: Test{IgnoreFailures: true, Timeout: sec},
			Helm3Defaults: true, WaitStrategy: WaitPoller, PostRenderStrategy: PostRenderSeparate,
			ValuesFrom: []ValuesReference{{Kind: "Secret", Name: "v", ValuesKey: "prod.yaml"}},
			Install: Install{Timeout: sec, CRDs: CRDsSkip, ServerSideApply: ptr(true),
				Remediation: InstallRemediation{IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(true)}},
			Upgrade: Upgrade{Timeout: sec, CRDs: CRDsCreateReplace, ServerSideApply: SSADisabled, ChartNameChangeStrategy: ChartNameInPlaceUpdate,
				Remediation: UpgradeRemediation{Retries: 2, IgnoreTestFailures: ptr(false), RemediateLastFailure: ptr(false), Strategy: StrategyUninstall}},
			Rollback:       Rollback{Timeout: sec, ServerSideApply: SSAEnabled},
			Uninstall:      Uninstall{Timeout: sec, DeletionPropagation: "orphan"},
			DriftDetection: DriftDetection{Mode: DriftWarn},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			before := tc.in
			before.ValuesFrom = append([]ValuesReference(nil), tc.in.ValuesFrom...)
			got := in.withDefaults()
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("withDefaults\n got %+v\nwant %+v", *got, tc.want)
			}
			if !reflect.DeepEqual(in, before) {
				t.Errorf("withDefaults changed the spec it was given: %+v, was %+v", in, before)
			}
		})
	}
}
