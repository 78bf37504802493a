package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/fielderr"
)

// TestRun is what Engine.Test did: the release it tested and the last run
// of each of its test hooks, as Helm recorded them in the release.
type TestRun struct {
	ReleaseName      string
	StorageNamespace string
	Version          int
	Chart            string // <chart>@<version>
	// Hooks are the test hooks that ran in this run, by name.
	Hooks []TestHook
}

// Test runs the Helm tests of the release spec names, now: `helm test` of
// the release that a stevedore_helmrelease of spec's names (ReleaseName,
// StorageNamespace) makes, with spec.Test's filters and timeout. It is the
// test runner of Reconcile (testRunner), given a status read from the
// release's record instead of a resource's: Helm records the hooks' runs in
// the release, as `helm test` does, and nothing else is written (no new
// revision, no status). progress, when not nil, is told of each phase a test
// hook enters. The release must be deployed: a release that is missing, or
// in any other status, is an error on the attribute that names it
// (`release_name` when spec has one, else `name`), and nothing is written.
// A failed test is an error that carries the failed hooks' pod logs, with
// the run.
func (e *Engine) Test(ctx context.Context, spec *Spec, progress func(TestHook)) (*TestRun, error) {
	spec = e.withDefaults(spec)
	if err := validateSpec(spec); err != nil {
		return nil, objectError(spec, err)
	}
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return nil, objectError(spec, err)
	}
	name := ReleaseName(spec)
	rls, err := sess.storage(nil).Last(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, objectError(spec, fmt.Errorf("read release %s from storage namespace %s%s: %w", name, sess.storageNS, sess.describeActor(), err))
	}
	if err := testable(spec, name, sess.storageNS, rls); err != nil {
		return nil, objectError(spec, err)
	}
	// The run changes the record's hooks: what refresh read is stale.
	e.read.forget(sess.storageNS, name)
	st := statusFromHistory([]*helmrelease.Release{rls}, spec.Test.Filters)
	req := &actionRequest{spec: spec, sess: sess, name: name, st: st, onTestHook: progress}
	started := time.Now()
	err = testRunner{}.run(ctx, req, releaseState{kind: stateUntested, rls: rls})
	if err == nil && req.lastErr != nil {
		// The runner leaves a failure whose results it recorded to the
		// remediation that follows it in an apply; here it is the result.
		err = req.lastErr
	}
	cur := latest(st.History)
	run := &TestRun{ReleaseName: name, StorageNamespace: sess.storageNS, Version: cur.Version, Chart: cur.chartRef()}
	for _, h := range cur.TestHooks {
		// The hooks the filters left out keep their earlier runs.
		if !h.LastStarted.Before(started) {
			run.Hooks = append(run.Hooks, h)
		}
	}
	if err != nil {
		return run, objectError(spec, err)
	}
	return run, nil
}

// testable says why rls, the latest record of release name in storage
// namespace storageNS (nil when there is none), cannot be tested, on the
// attribute that names the release; nil when it is deployed.
func testable(spec *Spec, name, storageNS string, rls *helmrelease.Release) error {
	path := "name"
	if spec.ReleaseName != "" {
		path = "release_name"
	}
	if rls == nil {
		return &fielderr.Error{Path: path, Err: fmt.Errorf("no Helm release %s in storage namespace %s: %s", name, storageNS, namingHint(spec))}
	}
	if rls.Info == nil || rls.Info.Status != helmcommon.StatusDeployed {
		status := "unknown"
		if rls.Info != nil {
			status = rls.Info.Status.String()
		}
		return &fielderr.Error{Path: path, Err: fmt.Errorf("the Helm release %s v%d in storage namespace %s is %s, not deployed: "+
			"tests run against a deployed release; apply its configuration (or remediate it) first", name, rls.Version, storageNS, status)}
	}
	return nil
}

// namingHint says how the release's names followed from spec, for an error
// that found no release by them.
func namingHint(spec *Spec) string {
	if spec.ReleaseName != "" && spec.StorageNamespace != "" {
		return "release_name and storage_namespace name it"
	}
	return "the release name is release_name, else <target_namespace>-<name> when target_namespace is set, else name; " +
		"the storage namespace is storage_namespace, else namespace, as stevedore_helmrelease names its release"
}
