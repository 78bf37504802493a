package release

import (
	"reflect"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	helmkube "helm.sh/helm/v4/pkg/kube"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// The mapping of the spec, with its defaults, onto Helm's actions, field by
// field, with the defaults a spec leaves to us and every option set.

func TestNewInstall_defaultsAndEveryOption(t *testing.T) {
	cfg := &action.Configuration{}
	in := newInstall(cfg, (&Spec{Name: "podinfo", Namespace: "apps"}).withDefaults(), "podinfo", "apps", releaseState{})
	want := map[string]any{
		"ReleaseName": "podinfo", "Namespace": "apps", "Timeout": DefaultTimeout, "WaitStrategy": pollerStrategy, "WaitForJobs": true,
		"ServerSideApply": true, "PostRenderStrategy": action.PostRenderStrategyCombined, "DisableHooks": false, "DisableOpenAPIValidation": false, "Replace": false, "CreateNamespace": false,
		"Devel": true, "SkipCRDs": true, "Description": "",
	}
	checkFields(t, in, want)

	spec := &Spec{Timeout: time.Minute, Description: "deployed by CI", Install: Install{Timeout: 2 * time.Minute, CreateNamespace: true, DisableHooks: true,
		DisableOpenAPIValidation: true, DisableWait: true, DisableWaitForJobs: true, Replace: true}}
	checkFields(t, newInstall(cfg, spec.withDefaults(), "r", "ns", releaseState{}), map[string]any{
		"Timeout": 2 * time.Minute, "WaitStrategy": noWaitStrategy, "WaitForJobs": false, "DisableHooks": true,
		"DisableOpenAPIValidation": true, "Replace": true, "CreateNamespace": true, "Description": "deployed by CI",
	})
	spec.Install.Timeout = 0
	checkFields(t, newInstall(cfg, spec.withDefaults(), "r", "ns", releaseState{}), map[string]any{"Timeout": time.Minute})

	// helm3_defaults: Helm 3's client-side apply, legacy wait and
	// post-renderers without hooks; each can still be set.
	checkFields(t, newInstall(cfg, (&Spec{Helm3Defaults: true}).withDefaults(), "r", "ns", releaseState{}), map[string]any{
		"ServerSideApply": false, "WaitStrategy": helmkube.LegacyStrategy, "PostRenderStrategy": action.PostRenderStrategyNoHooks,
	})
	h3 := &Spec{Helm3Defaults: true, WaitStrategy: WaitPoller, PostRenderStrategy: PostRenderSeparate, Install: Install{ServerSideApply: ptr(true)}}
	checkFields(t, newInstall(cfg, h3.withDefaults(), "r", "ns", releaseState{}), map[string]any{
		"ServerSideApply": true, "WaitStrategy": pollerStrategy, "PostRenderStrategy": action.PostRenderStrategySeparate,
	})
	legacy := &Spec{WaitStrategy: WaitLegacy, Install: Install{ServerSideApply: ptr(false)}}
	checkFields(t, newInstall(cfg, legacy.withDefaults(), "r", "ns", releaseState{}), map[string]any{
		"ServerSideApply": false, "WaitStrategy": helmkube.LegacyStrategy,
	})

	// An uninstalled release kept in history holds the name: replaced.
	kept := releaseState{kind: stateAbsent, rls: &helmrelease.Release{Info: &helmrelease.Info{Status: helmcommon.StatusUninstalled}}}
	checkFields(t, newInstall(cfg, (&Spec{}).withDefaults(), "r", "ns", kept), map[string]any{"Replace": true})
}

func TestNewUpgrade_defaultsAndEveryOption(t *testing.T) {
	cfg := &action.Configuration{}
	csa := writeMode{}
	checkFields(t, newUpgrade(cfg, (&Spec{}).withDefaults(), "apps", csa), map[string]any{
		"Namespace": "apps", "Timeout": DefaultTimeout, "WaitStrategy": pollerStrategy, "WaitForJobs": true, "ResetValues": true, "ReuseValues": false,
		"ServerSideApply": "false", "ForceConflicts": false, "MaxHistory": DefaultMaxHistory, "ForceReplace": false, "CleanupOnFail": false,
		"Devel": true, "SkipCRDs": true, "Description": "", "PostRenderStrategy": action.PostRenderStrategyCombined,
	})
	// The resolved mode, never Helm's own `auto`: Helm and the engine
	// cannot decide apart.
	checkFields(t, newUpgrade(cfg, (&Spec{}).withDefaults(), "apps", modeOf(true, true)), map[string]any{
		"ServerSideApply": "true", "ForceConflicts": true, "ForceReplace": false,
	})
	spec := &Spec{Description: "deployed by CI", Upgrade: Upgrade{Timeout: time.Second, CleanupOnFail: true, DisableHooks: true, DisableOpenAPIValidation: true,
		DisableWait: true, DisableWaitForJobs: true, Force: true, PreserveValues: true}}
	checkFields(t, newUpgrade(cfg, spec.withDefaults(), "apps", modeOf(false, true)), map[string]any{
		"Timeout": time.Second, "WaitStrategy": noWaitStrategy, "WaitForJobs": false, "ResetValues": false, "ReuseValues": true,
		"ForceReplace": true, "CleanupOnFail": true, "DisableHooks": true, "DisableOpenAPIValidation": true, "Description": "deployed by CI",
	})
}

func TestNewRollback_defaultsAndEveryOption(t *testing.T) {
	cfg := &action.Configuration{}
	checkFields(t, newRollback(cfg, (&Spec{Timeout: time.Minute, MaxHistory: ptr(3)}).withDefaults(), 4, writeMode{}), map[string]any{
		"Version": 4, "Timeout": time.Minute, "WaitStrategy": pollerStrategy, "WaitForJobs": true, "MaxHistory": 3,
		"ServerSideApply": "false", "ForceConflicts": false, "ForceReplace": false, "CleanupOnFail": false, "DisableHooks": false,
	})
	checkFields(t, newRollback(cfg, (&Spec{}).withDefaults(), 4, modeOf(true, true)), map[string]any{
		"ServerSideApply": "true", "ForceConflicts": true, "ForceReplace": false,
	})
	spec := &Spec{Rollback: Rollback{Timeout: time.Second, CleanupOnFail: true, DisableHooks: true, DisableWait: true,
		DisableWaitForJobs: true, Force: true}}
	checkFields(t, newRollback(cfg, spec.withDefaults(), 1, modeOf(false, true)), map[string]any{
		"Timeout": time.Second, "WaitStrategy": noWaitStrategy, "WaitForJobs": false, "ForceReplace": true,
		"CleanupOnFail": true, "DisableHooks": true,
	})
}

func TestNewTest_defaultsAndFilters(t *testing.T) {
	cfg := &action.Configuration{}
	checkFields(t, newTest(cfg, (&Spec{}).withDefaults(), "apps"), map[string]any{
		"Namespace": "apps", "Timeout": DefaultTimeout, "Filters": map[string][]string{},
	})
	spec := &Spec{Timeout: time.Minute, Test: Test{Filters: []TestFilter{{Name: "a"}, {Name: "b", Exclude: true}, {Name: "c"}}}}
	checkFields(t, newTest(cfg, spec.withDefaults(), "apps"), map[string]any{
		"Timeout": time.Minute,
		"Filters": map[string][]string{action.IncludeNameFilter: {"a", "c"}, action.ExcludeNameFilter: {"b"}},
	})
}

func TestNewUninstall_defaultsAndEveryOption(t *testing.T) {
	cfg := &action.Configuration{}
	checkFields(t, newUninstall(cfg, (&Spec{}).withDefaults()), map[string]any{
		"Timeout": DefaultTimeout, "WaitStrategy": helmkube.LegacyStrategy, "DeletionPropagation": "background", "KeepHistory": false, "DisableHooks": false,
	})
	spec := &Spec{Uninstall: Uninstall{Timeout: time.Second, DeletionPropagation: "orphan", DisableHooks: true, DisableWait: true, KeepHistory: true}}
	checkFields(t, newUninstall(cfg, spec.withDefaults()), map[string]any{
		"Timeout": time.Second, "WaitStrategy": noWaitUninstallStrategy, "DeletionPropagation": "orphan", "KeepHistory": true, "DisableHooks": true,
	})
}

// checkFields compares the named fields of the Helm action act with want.
func checkFields(t *testing.T, act any, want map[string]any) {
	t.Helper()
	v := reflect.ValueOf(act).Elem()
	for name, w := range want {
		f := v.FieldByName(name)
		if !f.IsValid() {
			t.Fatalf("%T has no field %s", act, name)
		}
		if got := f.Interface(); !reflect.DeepEqual(got, w) {
			t.Errorf("%T.%s = %#v, want %#v", act, name, got, w)
		}
	}
}
