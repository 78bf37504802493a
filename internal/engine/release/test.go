package release

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// as a failure of the install or upgrade that made the release.
type testRunner struct{}

func (testRunner) run(_ context.Context, req *actionRequest, _ releaseState) error {
	st, spec := req.st, req.spec
	cur := latest(st.History)
	if cur == nil {
		return errors.New("no release to test")
	}
	obs := &observer{}
	rlsi, shutdown, err := newTest(req.sess.config(obs), spec, req.sess.releaseNS).Run(req.name)
	// Helm 4 deletes the test hooks whose policy says so when shut down.
	if serr := shutdown(); err == nil && serr != nil {
		err = serr
	}
	rls, _ := asRelease(rlsi)
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
		setCondition(st, CondTestSuccess, "False", ReasonTestFailed, fmt.Sprintf(fmtTestFailure, cur.fullName(), cur.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
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
