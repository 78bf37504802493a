package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// Messages of the TestSuccess condition, helm-controller's wording.
const (
	fmtTestPending = "Helm release %s with chart %s is awaiting tests"
	fmtTestFailure = "Helm test failed for release %s with chart %s: %s"
	fmtTestSuccess = "Helm test succeeded for release %s with chart %s: %s"
)

// testRunner runs the Helm tests of the current release, as helm-controller's
// Test reconciler: the results go on the release's history entry, and a
// failure of tests that count (not ignored by the active remediation) counts
// as a failure of the install or upgrade that made the release. A failure's
// error carries the logs of the failed test hooks' pods (failedHookLogs), read
// before Helm's cleanup as `helm test --logs` reads them. It is the one test
// runner: the resource's apply (Reconcile) and the test action (Engine.Test)
// both run it.
type testRunner struct{}

func (testRunner) run(ctx context.Context, req *actionRequest, _ releaseState) error {
	st, spec := req.st, req.spec
	cur := latest(st.History)
	if cur == nil {
		return errors.New("no release to test")
	}
	started := time.Now()
	obs := &observer{}
	if req.onTestHook != nil {
		obs.notify = hookProgress(started, req.onTestHook)
	}
	rlsi, shutdown, err := newTest(req.sess.config(obs), spec, req.sess.releaseNS).Run(req.name)
	rls, _ := asRelease(rlsi)
	logs := ""
	if err != nil && rls != nil {
		// Before the shutdown, which deletes the hooks whose policy says so.
		logs = failedHookLogs(ctx, req.sess, rls, started)
	}
	// Helm 4 deletes the test hooks whose policy says so when shut down.
	if serr := shutdown(); err == nil && serr != nil {
		err = serr
	}
	if rls != nil && !cur.targets(rls) && err == nil {
		// Helm tests the latest release; results for another are not ours.
		err = fmt.Errorf("tested release %s/%s.v%d is not the current release %s", rls.Namespace, rls.Name, rls.Version, cur.fullName())
	}
	tested := false
	for _, w := range obs.releases() {
		if cur.targets(w) {
			hooks, _ := testResults(w, spec.Test.Filters)
			cur.TestHooks = hooks
			tested = true
		}
	}
	if err != nil {
		st.Failures++
		// The condition says what failed; the logs go with the error only.
		setCondition(st, CondTestSuccess, "False", ReasonTestFailed, fmt.Sprintf(fmtTestFailure, cur.fullName(), cur.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		err = withLogs(err, logs)
		req.noteFailure("test", err)
		if !tested {
			return fmt.Errorf("test failed: %w", err)
		}
		if rem := activeRemediation(spec, st, rls); rem != nil && !rem.ignoreTests {
			req.countFailure(rem.action)
		}
		return nil
	}
	n := len(cur.TestHooks)
	msg := "no test hooks"
	if n > 0 {
		msg = fmt.Sprintf("%d test hook(s) completed successfully", n)
	}
	setCondition(st, CondTestSuccess, "True", ReasonTestSucceeded, fmt.Sprintf(fmtTestSuccess, cur.fullName(), cur.chartRef(), msg))
	summarize(st, spec)
	return nil
}

// hookProgress is an observer's notify for a test run that started at
// since: it tells report of each test hook whose run started in this run,
// once per phase it is written in (Running as Helm starts it, then Succeeded
// or Failed), in the order Helm writes them. Hooks that did not run in this
// run (filtered out) keep their earlier runs and are not reported.
func hookProgress(since time.Time, report func(TestHook)) func(*helmrelease.Release) {
	seen := map[string]string{}
	return func(rls *helmrelease.Release) {
		for _, h := range rls.Hooks {
			if !isTestHook(h) || h.LastRun.StartedAt.IsZero() || h.LastRun.StartedAt.Before(since) {
				continue
			}
			phase := h.LastRun.Phase.String()
			if seen[h.Name] == phase {
				continue
			}
			seen[h.Name] = phase
			report(TestHook{Name: h.Name, Phase: phase, LastStarted: h.LastRun.StartedAt, LastCompleted: h.LastRun.CompletedAt})
		}
	}
}

// withLogs is err followed by the failed hooks' logs, when there are any.
func withLogs(err error, logs string) error {
	if logs == "" {
		return err
	}
	return &testLogsError{err: err, logs: logs}
}

// testLogsError is a test failure with the logs of its failed hooks' pods.
type testLogsError struct {
	err  error
	logs string
}

func (e *testLogsError) Error() string { return e.err.Error() + "\n" + e.logs }
func (e *testLogsError) Unwrap() error { return e.err }
