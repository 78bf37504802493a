package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	helmcommon "helm.sh/helm/v4/pkg/release/common"
	helmrelease "helm.sh/helm/v4/pkg/release/v1"
)

// observation is the part of a release its digest covers, with the JSON
// field names of helm-controller's release observation: everything but the
// chart's files and the test hooks, whose runs would otherwise change the
// digest of an unchanged release.
type observation struct {
	Name          string         `json:"name"`
	Version       int            `json:"version"`
	Info          v3Info         `json:"info"`
	ChartMetadata chart.Metadata `json:"chartMetadata"`
	Config        map[string]any `json:"config"`
	Manifest      string         `json:"manifest"`
	Hooks         []v3Hook       `json:"hooks"`
	Namespace     string         `json:"namespace"`
	OCIDigest     string         `json:"ociDigest"`
}

// releaseDigest is `sha256:<hex>` of the release's observation as JSON, as
// Helm 3's types encoded it (v3Info, v3Hook), so that the digest of a
// release is the same whichever Helm reads it.
func releaseDigest(rls *helmrelease.Release) string {
	obs := observation{Name: rls.Name, Version: rls.Version, Manifest: rls.Manifest, Namespace: rls.Namespace}
	obs.Info = v3InfoOf(rls.Info)
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		obs.ChartMetadata = *rls.Chart.Metadata
	}
	if len(rls.Config) > 0 {
		obs.Config = normalizeValues(rls.Config)
	}
	for _, h := range rls.Hooks {
		if !isTestHook(h) {
			obs.Hooks = append(obs.Hooks, v3HookOf(h))
		}
	}
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(obs); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// normalizeValues passes values through JSON, the form Helm stores them in,
// so that a release digests the same as written (ints) and as read back
// (float64s).
func normalizeValues(v map[string]any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// snapshotOf describes rls as a history entry. chartDigest is the chart's
// digest when we know which bytes made the release.
func snapshotOf(rls *helmrelease.Release, chartDigest string) Snapshot {
	s := Snapshot{
		Name:         rls.Name,
		Namespace:    rls.Namespace,
		Version:      rls.Version,
		ConfigDigest: DigestValues(rls.Config),
		Digest:       releaseDigest(rls),
		ChartDigest:  chartDigest,
	}
	if rls.Info != nil {
		s.Status = rls.Info.Status.String()
		s.FirstDeployed = rls.Info.FirstDeployed
		s.LastDeployed = rls.Info.LastDeployed
		s.Deleted = rls.Info.Deleted
	}
	if rls.Chart != nil && rls.Chart.Metadata != nil {
		s.ChartName = rls.Chart.Metadata.Name
		s.ChartVersion = rls.Chart.Metadata.Version
		s.AppVersion = rls.Chart.Metadata.AppVersion
	}
	return s
}

// fullName is `<namespace>/<name>.v<version>`, as helm-controller's messages
// name a release.
func (s *Snapshot) fullName() string { return fmt.Sprintf("%s/%s.v%d", s.Namespace, s.Name, s.Version) }

// chartRef is `<chart>@<version>`.
func (s *Snapshot) chartRef() string { return s.ChartName + "@" + s.ChartVersion }

// targets says whether s describes rls.
func (s *Snapshot) targets(rls *helmrelease.Release) bool {
	return s != nil && rls != nil && s.Name == rls.Name && s.Namespace == rls.Namespace && s.Version == rls.Version
}

func (s *Snapshot) hasFailedTest() bool {
	for _, h := range s.TestHooks {
		if h.Phase == helmrelease.HookPhaseFailed.String() {
			return true
		}
	}
	return false
}

// latest is the newest entry of the history, or nil.
func latest(h []Snapshot) *Snapshot {
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}

func sortSnapshots(h []Snapshot) {
	sort.SliceStable(h, func(i, j int) bool { return h[i].Version > h[j].Version })
}

func isDeployedOrSuperseded(status string) bool {
	return status == helmcommon.StatusDeployed.String() || status == helmcommon.StatusSuperseded.String()
}

// previousSnapshot is the rollback target: the newest entry after the latest
// that was deployed or superseded and, unless test failures are ignored, did
// not fail its tests.
func previousSnapshot(h []Snapshot, ignoreTests bool) *Snapshot {
	for i := 1; i < len(h); i++ {
		if isDeployedOrSuperseded(h[i].Status) && (ignoreTests || !h[i].hasFailedTest()) {
			return &h[i]
		}
	}
	return nil
}

// truncateHistory drops the entries older than the rollback target, as
// helm-controller does, so that failures do not pile up: the history keeps
// what a remediation needs and no more. Without a target it keeps max entries
// (DefaultMaxHistory when max is 0).
func truncateHistory(h []Snapshot, ignoreTests bool, max int) []Snapshot {
	if max <= 0 {
		max = DefaultMaxHistory
	}
	for i := 1; i < len(h); i++ {
		if isDeployedOrSuperseded(h[i].Status) && (ignoreTests || !h[i].hasFailedTest()) {
			return h[:i+1]
		}
	}
	if len(h) > max {
		return h[:max]
	}
	return h
}

// capHistory bounds the history to MaxHistory entries, Helm's own bound on
// what storage keeps (0 keeps all).
func capHistory(h []Snapshot, max int) []Snapshot {
	if max > 0 && len(h) > max {
		return h[:max]
	}
	return h
}

// upsertSnapshot records s in the history: it replaces the entry of the same
// release revision, keeping what only we know of it (test results, chart
// digest), or becomes the newest entry.
func upsertSnapshot(h []Snapshot, s Snapshot) []Snapshot {
	for i := range h {
		if h[i].Name == s.Name && h[i].Namespace == s.Namespace && h[i].Version == s.Version {
			if s.TestHooks == nil {
				s.TestHooks = h[i].TestHooks
			}
			if s.ChartDigest == "" {
				s.ChartDigest = h[i].ChartDigest
			}
			h[i] = s
			return h
		}
	}
	h = append([]Snapshot{s}, h...)
	sortSnapshots(h)
	return h
}

func sortReleasesDesc(rs []*helmrelease.Release) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Version > rs[j].Version })
}

// Test hooks.

func isTestHook(h *helmrelease.Hook) bool {
	for _, e := range h.Events {
		if e == helmrelease.HookTest {
			return true
		}
	}
	return false
}

// selectedTestHooks are the test hooks the filters let run, as Helm's
// ReleaseTesting applies them: excluded names drop out, and named includes
// keep only themselves.
func selectedTestHooks(rls *helmrelease.Release, filters []TestFilter) []*helmrelease.Hook {
	var include, exclude []string
	for _, f := range filters {
		if f.Exclude {
			exclude = append(exclude, f.Name)
		} else {
			include = append(include, f.Name)
		}
	}
	var out []*helmrelease.Hook
	for _, h := range rls.Hooks {
		if !isTestHook(h) || slices.Contains(exclude, h.Name) || (len(include) > 0 && !slices.Contains(include, h.Name)) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// ranSince says whether the hook ran for this deployment of the release.
// A rollback copies the hooks of its target with their old runs, and a new
// LastDeployed: those runs do not count, as helm-controller does not count a
// rollback as tested.
func ranSince(h *helmrelease.Hook, rls *helmrelease.Release) bool {
	started := h.LastRun.StartedAt
	if started.IsZero() {
		return false
	}
	if rls.Info == nil {
		return true
	}
	return !started.Before(rls.Info.LastDeployed)
}

// testResults are the results of the test hooks that ran for this deployment.
// tested is false when tests are due: some selected hook exists and none ran.
func testResults(rls *helmrelease.Release, filters []TestFilter) (hooks []TestHook, tested bool) {
	selected := selectedTestHooks(rls, filters)
	for _, h := range rls.Hooks {
		if !isTestHook(h) || !ranSince(h, rls) {
			continue
		}
		hooks = append(hooks, TestHook{
			Name:          h.Name,
			Phase:         h.LastRun.Phase.String(),
			LastStarted:   h.LastRun.StartedAt,
			LastCompleted: h.LastRun.CompletedAt,
		})
	}
	sort.Slice(hooks, func(i, j int) bool { return hooks[i].Name < hooks[j].Name })
	if len(selected) == 0 {
		return hooks, true
	}
	for _, h := range selected {
		if ranSince(h, rls) {
			return hooks, true
		}
	}
	return hooks, false
}

// refreshKnown brings the entries of h up to date with the releases of
// storage they describe (a `helm rollback` supersedes the deployed one).
// Releases that h does not know (another client's) are not added: the
// history is what this resource made, as helm-controller's is.
func refreshKnown(h []Snapshot, stored []*helmrelease.Release) []Snapshot {
	for _, rls := range stored {
		for i := range h {
			if h[i].targets(rls) {
				h = upsertSnapshot(h, snapshotOf(rls, ""))
				break
			}
		}
	}
	return h
}
