package release

import (
	"context"
	"errors"
	"fmt"
	"strings"

	helmcommon "helm.sh/helm/v4/pkg/release/common"
)

// Messages of an uninstall remediation's Remediated condition,
// helm-controller's wording.
const (
	fmtUninstallFailure = "Helm uninstall remediation for release %s with chart %s failed: %s"
	fmtUninstallSuccess = "Helm uninstall remediation for release %s with chart %s succeeded"
)

// uninstallRunner remediates a failed install (or an upgrade with the
// uninstall strategy) by uninstalling the release, as helm-controller's
// UninstallRemediation reconciler; the history keeps the entry of what was
// uninstalled, also when Helm purged its record. Destroy is Engine.Uninstall.
type uninstallRunner struct{}

func (uninstallRunner) run(_ context.Context, req *actionRequest, _ releaseState) error {
	st, spec := req.st, req.spec
	cur := latest(st.History)
	if cur == nil {
		return errors.New("no release to uninstall")
	}
	before := *cur
	obs := &observer{}
	_, err := newUninstall(req.sess.config(obs), spec).Run(req.name)

	changed := false
	for _, w := range obs.releases() {
		if before.targets(w) {
			req.updateKnown(w)
			changed = true
		}
	}
	for _, d := range obs.deleted {
		if before.targets(d) {
			// Purged (no keep_history): what remains is our record of it.
			c := latest(st.History)
			c.Status = helmcommon.StatusUninstalled.String()
			if c.Deleted.IsZero() && d.Info != nil {
				c.Deleted = d.Info.Deleted
			}
			changed = true
		}
	}
	if err == nil && !changed {
		err = errors.New("uninstall completed without updating Helm storage")
	}
	if err != nil {
		st.Failures++
		setCondition(st, CondRemediated, "False", ReasonUninstallFailed, fmt.Sprintf(fmtUninstallFailure, before.fullName(), before.chartRef(), strings.TrimSpace(err.Error())))
		summarize(st, spec)
		req.noteFailure("uninstall", err)
		if !changed {
			return fmt.Errorf("uninstall failed: %w", err)
		}
		return nil
	}
	setCondition(st, CondRemediated, "True", ReasonUninstallSucceeded, fmt.Sprintf(fmtUninstallSuccess, before.fullName(), before.chartRef()))
	summarize(st, spec)
	return nil
}
