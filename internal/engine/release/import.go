package release

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"

	"github.com/stevedore-dev/terraform-provider-stevedore/internal/engine/kube"
)

// Imported is what Import reads of a running release.
type Imported struct {
	Status *Status
	// Values are the release's user-supplied values (Helm's config), so that a
	// configuration that matches the running release plans empty.
	Values          map[string]any
	TargetNamespace string
	// Owner is the owner ID the release carries, "" when none: the
	// importing instance takes it as its own, so that the owner recorded in
	// the cluster and in state agree.
	Owner string
	// Description is the description the latest release was given by the
	// install or upgrade that made it, "" when Helm's own text describes it
	// (GivenDescription).
	Description string
	// recorded is the chart Helm stored in the latest release (ChartIs).
	recorded *chart.Chart
}

// Import reads the release name from storageNS, made elsewhere, into a status, so that state
// can describe it as if we had made it: the history is the release's, with
// digests computed here, so that the first apply manages it without an
// upgrade when the configuration matches.
func (e *Engine) Import(ctx context.Context, storageNS, name string) (*Imported, error) {
	ref := fmt.Sprintf("helmrelease %s/%s", storageNS, name)
	spec := (&Spec{Name: name, Namespace: storageNS, StorageNamespace: storageNS, ReleaseName: name}).withDefaults()
	sess, err := newSession(e.kube, spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	hist, err := sess.storage(nil).History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && len(hist) == 0) {
		return nil, fmt.Errorf("%s: %w", ref, &NotFoundError{ReleaseName: name, StorageNamespace: storageNS, Candidates: targetCandidates(sess, storageNS, name)})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read release history: %w", ref, err)
	}
	sortReleasesDesc(hist)
	last := hist[0]
	if last.Info == nil || last.Chart == nil || last.Chart.Metadata == nil {
		return nil, fmt.Errorf("%s: release v%d is incomplete in storage", ref, last.Version)
	}
	if last.Info.Status == helmcommon.StatusUninstalled {
		return nil, fmt.Errorf("%s: release is uninstalled", ref)
	}
	st := statusFromHistory(hist, nil)
	st.ReleaseName, st.StorageNamespace = name, storageNS
	return &Imported{Status: st, Values: normalizeValues(last.Config), TargetNamespace: last.Namespace, Owner: last.Labels[kube.OwnerLabel],
		Description: GivenDescription(last), recorded: last.Chart}, nil
}

// NotFoundError says that there is no release to import.
type NotFoundError struct {
	ReleaseName, StorageNamespace string
	// Candidates are the import IDs of the releases of the storage
	// namespace that the ID would name with a target namespace
	// (`<target>-<name>`, Flux's release name), by release name.
	Candidates map[string]string
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no release %q in storage namespace %q", e.ReleaseName, e.StorageNamespace)
	if len(e.Candidates) == 0 {
		return msg
	}
	names := slices.Sorted(maps.Keys(e.Candidates))
	var ids []string
	for _, n := range names {
		ids = append(ids, fmt.Sprintf("%q (release %s)", e.Candidates[n], n))
	}
	return msg + "; a HelmRelease with a target namespace names its release <target_namespace>-<name>, and these releases of that " +
		"storage namespace would be imported with: " + strings.Join(ids, ", ")
}

// targetCandidates lists, by release name, the import IDs of the releases of
// storageNS whose names are `<target>-<name>`, as Flux names the release of a
// HelmRelease name with a target namespace. A failed listing lists none.
func targetCandidates(sess *session, storageNS, name string) map[string]string {
	all, err := sess.storage(nil).ListReleases()
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, rls := range all {
		target, ok := strings.CutSuffix(rls.Name, "-"+name)
		if !ok || target == "" {
			continue
		}
		spec := &Spec{Namespace: storageNS, Name: name, TargetNamespace: target}
		out[rls.Name] = ImportIDOf(spec, rls.Name, storageNS, rls.Namespace)
	}
	return out
}

// statusFromHistory describes releases (any order) as a status: history
// newest first, the latest release's facts, and conditions from its state.
func statusFromHistory(hist []*helmrelease.Release, filters []TestFilter) *Status {
	hist = append([]*helmrelease.Release(nil), hist...)
	sortReleasesDesc(hist)
	st := &Status{}
	for _, rls := range hist {
		if rls.Info == nil || rls.Chart == nil || rls.Chart.Metadata == nil {
			continue
		}
		s := snapshotOf(rls, "")
		s.TestHooks, _ = testResults(rls, filters)
		st.History = append(st.History, s)
		if len(st.History) == DefaultMaxHistory {
			break
		}
	}
	if len(hist) == 0 || len(st.History) == 0 {
		return st
	}
	last := hist[0]
	setRelease(st, last)
	st.ConfigDigest = DigestValues(last.Config)
	st.LastAttemptedReleaseAction = inferLastAction(last)
	cur := &st.History[0]
	switch last.Info.Status {
	case helmcommon.StatusDeployed:
		reason, msg := ReasonUpgradeSucceeded, fmt.Sprintf(fmtUpgradeSuccess, cur.fullName(), cur.chartRef())
		if st.LastAttemptedReleaseAction == actionInstall {
			reason, msg = ReasonInstallSucceeded, fmt.Sprintf(fmtInstallSuccess, cur.fullName(), cur.chartRef())
		}
		setCondition(st, CondReleased, "True", reason, msg)
	default:
		setCondition(st, CondReleased, "False", "Release"+titleStatus(last.Info.Status),
			fmt.Sprintf("Helm release %s with chart %s is %s: %s", cur.fullName(), cur.chartRef(), last.Info.Status, last.Info.Description))
	}
	summarize(st, &Spec{})
	return st
}

// titleStatus turns `pending-install` into `PendingInstall`, for a reason.
func titleStatus(s helmcommon.Status) string {
	out := make([]byte, 0, len(s))
	up := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		out = append(out, c)
	}
	return string(out)
}
