package release

import (
	"helm.sh/helm/v4/pkg/action"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
)

// The Helm actions as the spec configures them: each function maps the spec,
// with its defaults (Spec.withDefaults), onto one of Helm's action structs and
// does nothing else, as
// helm-controller's internal/action. Running them and keeping the books is
// actions.go's.

// newInstall maps the spec onto Helm's install action, for the release
// state s it installs over.
func newInstall(cfg *action.Configuration, spec *Spec, name, namespace string, s releaseState) *action.Install {
	in := action.NewInstall(cfg)
	in.ReleaseName = name
	in.Namespace = namespace
	in.Timeout = spec.Install.Timeout
	// The write mode is applymethod.go's; an install forces no conflict:
	// the objects are new (or adopted, and Helm then takes them).
	in.ServerSideApply = installMode(spec).ServerSide
	in.WaitStrategy = waitStrategy(spec, spec.Install.DisableWait)
	in.WaitForJobs = !spec.Install.DisableWaitForJobs
	in.DisableHooks = spec.Install.DisableHooks
	in.DisableOpenAPIValidation = spec.Install.DisableOpenAPIValidation
	in.SkipSchemaValidation = spec.Install.DisableSchemaValidation
	// An uninstalled release kept in history (keep_history) holds the
	// name: replacing it is what Helm's --replace is for, and a second
	// apply must not fail with "cannot reuse a name".
	in.Replace = spec.Install.Replace || (s.rls != nil && s.rls.Info.Status == helmcommon.StatusUninstalled)
	in.Devel = true
	in.SkipCRDs = true // applied before, with our policy
	// The release namespace: target_namespace, else namespace, as Flux's.
	in.CreateNamespace = spec.Install.CreateNamespace
	in.PostRenderer = newPostRenderer(spec)
	in.PostRenderStrategy = action.PostRenderStrategy(spec.PostRenderStrategy)
	in.Labels = ownerLabels(spec)
	in.Description = spec.Description
	// Checked first: never another owner's object (takeownership.go).
	in.TakeOwnership = spec.Install.TakeOwnership
	// Taking an object under server-side apply takes its fields from their
	// managers, as helm-controller's install (which always forces).
	in.ForceConflicts = in.ServerSideApply && in.TakeOwnership
	return in
}

// newUpgrade maps the spec onto Helm's upgrade action, writing as mode says
// (upgradeMode).
func newUpgrade(cfg *action.Configuration, spec *Spec, namespace string, mode writeMode) *action.Upgrade {
	up := action.NewUpgrade(cfg)
	up.Namespace = namespace
	up.ResetValues = !spec.Upgrade.PreserveValues
	up.ReuseValues = spec.Upgrade.PreserveValues
	up.MaxHistory = *spec.MaxHistory
	up.Timeout = spec.Upgrade.Timeout
	up.ServerSideApply = mode.helmSSA()
	up.ForceConflicts = mode.ForceConflicts
	up.ForceReplace = mode.ForceReplace
	up.WaitStrategy = waitStrategy(spec, spec.Upgrade.DisableWait)
	up.WaitForJobs = !spec.Upgrade.DisableWaitForJobs
	up.DisableHooks = spec.Upgrade.DisableHooks
	up.DisableOpenAPIValidation = spec.Upgrade.DisableOpenAPIValidation
	up.SkipSchemaValidation = spec.Upgrade.DisableSchemaValidation
	up.CleanupOnFail = spec.Upgrade.CleanupOnFail
	up.Devel = true
	up.SkipCRDs = true // applied before, with our policy
	up.PostRenderer = newPostRenderer(spec)
	up.PostRenderStrategy = action.PostRenderStrategy(spec.PostRenderStrategy)
	// Helm merges these into the previous record's labels: an upgrade
	// stamps a release made before owners were recorded, or imported.
	up.Labels = ownerLabels(spec)
	up.Description = spec.Description
	// Checked first: never another owner's object (takeownership.go).
	up.TakeOwnership = spec.Upgrade.TakeOwnership
	return up
}

// newTest maps the spec onto Helm's test action: its timeout and the test
// filters, by hook name.
func newTest(cfg *action.Configuration, spec *Spec, namespace string) *action.ReleaseTesting {
	t := action.NewReleaseTesting(cfg)
	t.Namespace = namespace
	t.Timeout = spec.Test.Timeout
	t.Filters = map[string][]string{}
	for _, f := range spec.Test.Filters {
		key := action.IncludeNameFilter
		if f.Exclude {
			key = action.ExcludeNameFilter
		}
		t.Filters[key] = append(t.Filters[key], f.Name)
	}
	return t
}

// newRollback maps the spec onto Helm's rollback action, to revision
// version, writing as mode says (rollbackMode).
func newRollback(cfg *action.Configuration, spec *Spec, version int, mode writeMode) *action.Rollback {
	rb := action.NewRollback(cfg)
	rb.Version = version
	rb.Timeout = spec.Rollback.Timeout
	rb.ServerSideApply = mode.helmSSA()
	rb.ForceConflicts = mode.ForceConflicts
	rb.ForceReplace = mode.ForceReplace
	rb.WaitStrategy = waitStrategy(spec, spec.Rollback.DisableWait)
	rb.WaitForJobs = !spec.Rollback.DisableWaitForJobs
	rb.DisableHooks = spec.Rollback.DisableHooks
	// Helm 4 has no Recreate (Helm 3's restart of the pods of a rollback):
	// the schema marks rollback.recreate deprecated, with no effect.
	rb.CleanupOnFail = spec.Rollback.CleanupOnFail
	rb.MaxHistory = *spec.MaxHistory
	return rb
}

// newUninstall maps the spec onto Helm's uninstall action, for destroy and
// for remediation alike.
func newUninstall(cfg *action.Configuration, spec *Spec) *action.Uninstall {
	un := action.NewUninstall(cfg)
	un.DisableHooks = spec.Uninstall.DisableHooks
	un.KeepHistory = spec.Uninstall.KeepHistory
	un.WaitStrategy = uninstallWaitStrategy(spec.Uninstall.DisableWait)
	un.DeletionPropagation = spec.Uninstall.DeletionPropagation
	un.Timeout = spec.Uninstall.Timeout
	return un
}
