package release

import "sort"

// Conditions of a release's Status, kstatus style as helm-controller sets
// them on a HelmRelease, and the Ready summary.

const (
	CondReady       = "Ready"
	CondReleased    = "Released"
	CondTestSuccess = "TestSuccess"
	CondRemediated  = "Remediated"
	CondStalled     = "Stalled"
)

// Condition reasons, helm-controller's.
const (
	ReasonInstallSucceeded   = "InstallSucceeded"
	ReasonInstallFailed      = "InstallFailed"
	ReasonUpgradeSucceeded   = "UpgradeSucceeded"
	ReasonUpgradeFailed      = "UpgradeFailed"
	ReasonTestSucceeded      = "TestSucceeded"
	ReasonTestFailed         = "TestFailed"
	ReasonAwaitingTests      = "AwaitingTests"
	ReasonRollbackSucceeded  = "RollbackSucceeded"
	ReasonRollbackFailed     = "RollbackFailed"
	ReasonUninstallSucceeded = "UninstallSucceeded"
	ReasonUninstallFailed    = "UninstallFailed"
	ReasonPendingRelease     = "PendingRelease"
	ReasonReconcileError     = "ReconcileError"
	// ReasonDependencyNotReady: an install or upgrade did not start because
	// its dependencies are not met.
	ReasonDependencyNotReady = "DependencyNotReady"
	ReasonRetriesExceeded    = "RetriesExceeded"
)

func getCondition(st *Status, typ string) *Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

func setCondition(st *Status, typ, status, reason, msg string) {
	if c := getCondition(st, typ); c != nil {
		c.Status, c.Reason, c.Message = status, reason, msg
	} else {
		st.Conditions = append(st.Conditions, Condition{Type: typ, Status: status, Reason: reason, Message: msg})
	}
	sortConditions(st.Conditions)
}

func deleteCondition(st *Status, typ string) {
	out := st.Conditions[:0]
	for _, c := range st.Conditions {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	st.Conditions = out
}

var conditionOrder = map[string]int{CondReady: 0, CondReleased: 1, CondTestSuccess: 2, CondRemediated: 3, CondStalled: 4}

// sortConditions keeps a fixed order, so that state does not change when
// nothing did.
func sortConditions(cs []Condition) {
	sort.SliceStable(cs, func(i, j int) bool { return conditionOrder[cs[i].Type] < conditionOrder[cs[j].Type] })
}

// summarize derives Ready from the others as helm-controller does: the first
// present of Remediated, TestSuccess (when tests count) and Released; a
// remediation is never Ready.
func summarize(st *Status, spec *Spec) {
	if !spec.Test.Enable {
		deleteCondition(st, CondTestSuccess)
	}
	order := []string{CondRemediated, CondReleased}
	if spec.Test.Enable && !spec.Test.IgnoreFailures {
		order = []string{CondRemediated, CondTestSuccess, CondReleased}
	}
	for _, typ := range order {
		c := getCondition(st, typ)
		if c == nil {
			continue
		}
		status := c.Status
		if typ == CondRemediated {
			status = "False"
		}
		setCondition(st, CondReady, status, c.Reason, c.Message)
		return
	}
}
